// Issue 40 items 4 and 11 (Postmark): provider notifications replayed, dated long ago, or cut
// mid-emoji — over a real socket, on the real app, the Postgres-table log and the real projector.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import { notification, type ProviderSenders } from '../provider-senders.js';
import { emailStatus, openProviderWorld, postNotification, sentEmail } from '../providers-support.js';
import type { SendingWorld } from '../sending-support.js';
import { closeAll, project, suffix } from '../support.js';

let world: SendingWorld;
let senders: ProviderSenders;
let base: string;
const run = suffix();
const T = `replay-${run}`;
let n = 0;

beforeAll(async () => {
  ({ senders, world, base } = await openProviderWorld());
}, 60_000);

afterAll(() => closeAll(world, senders));

async function seed() {
  const emailId = `em_${run}_${++n}`;
  const relayId = `relay-${run}-${n}`;
  await project(world.stores, sentEmail(T, emailId, relayId));
  return { emailId, messageId: `${emailId}@tern.test`, relayId };
}

const post = (provider: string, body: string, headers: Record<string, string>) =>
  postNotification(base, provider, body, headers);
const statusOf = (emailId: string) => emailStatus(world.stores.pool, T, emailId);

const mailgunBody = (signature: object, messageId: string, event: Record<string, unknown>) =>
  JSON.stringify({
    signature,
    'event-data': {
      id: `evt-${run}-${++n}`,
      timestamp: Date.now() / 1000,
      ...event,
      message: { headers: { 'message-id': messageId } },
    },
  });
const json = { 'content-type': 'application/json' };
const failed = { event: 'failed', severity: 'permanent', reason: 'bounce' };

describe('POST /providers/mailgun: a signature is used once, and only while fresh', () => {
  it('a captured "delivered" signature re-posted as a permanent failure → 401, nothing appended', async () => {
    const victim = await seed();
    const other = await seed();
    const signature = senders.mailgunSignature();
    const genuine = mailgunBody(signature, other.messageId, { event: 'delivered' });
    expect((await post('mailgun', genuine, json)).body).toMatchObject({ applied: 1 });
    // Mailgun's own retry of the same request: the same event again, a duplicate.
    expect((await post('mailgun', genuine, json)).status).toBe(200);
    const replay = mailgunBody(signature, victim.messageId, failed);
    const res = await post('mailgun', replay, json);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('INVALID_CREDENTIAL');
    // A fresh genuine event for the victim: once it is folded, the replay (had it been appended) would be too.
    await post(
      'mailgun',
      mailgunBody(senders.mailgunSignature(), victim.messageId, { event: 'delivered' }),
      json,
    );
    await waitFor(async () => (await statusOf(victim.emailId)) === 'DELIVERED', { timeoutMs: 15_000 });
    await waitFor(async () => (await statusOf(other.emailId)) === 'DELIVERED', { timeoutMs: 15_000 });
    const suppressed = await world.stores.pool.query('SELECT 1 FROM suppressions WHERE tenant_id = $1', [T]);
    expect(suppressed.rowCount).toBe(0);
  });

  it('a signature dated 2020, or 6 minutes old, or 6 minutes ahead → 401; 4 minutes old → applied', async () => {
    const email = await seed();
    for (const at of [
      new Date('2020-06-01T00:00:00Z'),
      new Date(Date.now() - 6 * 60_000),
      new Date(Date.now() + 6 * 60_000),
    ]) {
      const res = await post(
        'mailgun',
        mailgunBody(senders.mailgunSignature(undefined, at), email.messageId, failed),
        json,
      );
      expect(res.status, at.toISOString()).toBe(401);
    }
    const recent = senders.mailgunSignature(undefined, new Date(Date.now() - 4 * 60_000));
    expect(
      (await post('mailgun', mailgunBody(recent, email.messageId, { event: 'delivered' }), json)).body,
    ).toMatchObject({
      applied: 1,
    });
  });

  it('past the token memory, a replay is still refused: its signature is too old by then', async () => {
    const email = await seed();
    // Signed 16 minutes ago and accepted then; the remembered token has since been pruned.
    const signature = senders.mailgunSignature(undefined, new Date(Date.now() - 16 * 60_000));
    await world.stores.pool.query('DELETE FROM provider_tokens');
    const res = await post('mailgun', mailgunBody(signature, email.messageId, failed), json);
    expect(res.status).toBe(401);
  });
});

describe('POST /providers/sendgrid: the signed timestamp must be fresh', () => {
  it('a year-old signed timestamp → 401; a current one → applied', async () => {
    const email = await seed();
    const { body } = notification(senders, 'sendgrid', 'hard_bounce', email.relayId, `evt-${run}-${++n}`);
    const yearAgo = new Date(Date.now() - 365 * 86_400_000);
    const old = await post('sendgrid', body, senders.sendgridHeaders(body, yearAgo));
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('INVALID_CREDENTIAL');
    expect((await post('sendgrid', body, senders.sendgridHeaders(body))).body).toMatchObject({ applied: 1 });
  });
});

describe('POST /providers/postmark: Details cut mid-emoji at 2 000 characters', () => {
  it('the bounce is applied (the lone surrogate replaced), not counted ignored', async () => {
    const email = await seed();
    // 1 999 characters then an emoji whose second half Postmark's cut left out: a lone high surrogate.
    const details = `smtp;550 5.1.1 user unknown ${'x'.repeat(1999 - 28)}\ud83d`;
    const body = JSON.stringify({
      RecordType: 'Bounce',
      Type: 'HardBounce',
      Details: details,
      BouncedAt: new Date().toISOString(),
      ID: `evt-${run}-${++n}`,
      MessageID: email.relayId,
      Recipient: `${email.emailId}@example.com`,
    });
    // And one cut by Tern's own 2 000-character clip: an emoji across the limit.
    const across = body.replace(`${'x'.repeat(1999 - 28)}\\ud83d`, `${'x'.repeat(1999 - 28)}😀tail`);
    const res = await post('postmark', body, senders.postmarkHeaders());
    expect(res).toEqual({ status: 200, body: { received: 1, applied: 1, ignored: 0 } });
    const other = await seed();
    const res2 = await post(
      'postmark',
      across.replace(email.relayId, other.relayId).replace(/"ID":"[^"]+"/, `"ID":"evt-${run}-${++n}"`),
      senders.postmarkHeaders(),
    );
    expect(res2).toEqual({ status: 200, body: { received: 1, applied: 1, ignored: 0 } });
    await waitFor(async () => (await statusOf(email.emailId)) === 'BOUNCED', { timeoutMs: 15_000 });
    await waitFor(async () => (await statusOf(other.emailId)) === 'BOUNCED', { timeoutMs: 15_000 });
  });
});
