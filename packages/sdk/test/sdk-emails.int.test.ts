// `client.emails.*` against the real sending pipeline (API + projector + sender with the sandbox
// provider, real Postgres, chDB and the table log), listening on a loopback port.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SendingWorld } from '../../../services/api/test/sending-support.js';
import { bearer } from '../../../services/api/test/support.js';
import { waitFor } from '../../../test/support/services.js';
import { type FetchLike, init, TernApiError } from '../src/index.js';
import { openSendingWorldWithKey } from './support.js';

const TENANT = `sdk-send-${Date.now()}`;
let world: SendingWorld;
let baseUrl: string;
let key: string;

beforeAll(async () => {
  ({ world, baseUrl, key } = await openSendingWorldWithKey(TENANT, ['email:send', 'email:read']));
}, 120_000);

afterAll(async () => {
  await world?.close();
});

const email = { from: 'Acme <hello@acme.test>', to: 'delivered@sandbox.test', subject: 'Hi', text: 'Hello' };

describe('client.emails', () => {
  it('send → get shows the timeline up to DELIVERED', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const { id } = await tern.emails.send(email);
    expect(id).toMatch(/^em_/);
    const detail = await waitFor(async () => {
      const d = await tern.emails.get(id);
      return d.status === 'DELIVERED' ? d : null;
    });
    expect(detail.events.map((e) => e.type)).toEqual(['email.queued', 'email.sent', 'email.delivered']);
  });

  it('attachments (SPEC §22): sent as base64, the sandbox describes them; bad base64 → TernApiError 400', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const file = Buffer.from('%PDF-1.4 a tiny invoice');
    const { id } = await tern.emails.send({
      ...email,
      html: '<img src="cid:logo">',
      attachments: [
        { filename: 'invoice.pdf', content: file.toString('base64') },
        { filename: 'logo.png', content: Buffer.from('png').toString('base64'), contentId: 'logo' },
      ],
    });
    await waitFor(async () => (await tern.emails.get(id)).status === 'DELIVERED');
    const content = await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(key) });
    expect(content.json().attachments).toMatchObject([
      { filename: 'invoice.pdf', contentType: 'application/pdf', contentId: null, size: file.length },
      { filename: 'logo.png', contentType: 'image/png', contentId: 'logo', size: 3 },
    ]);
    const refused = await tern.emails
      .send({ ...email, attachments: [{ filename: 'a.pdf', content: 'not base64' }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TernApiError);
    expect((refused as TernApiError).status).toBe(400);
  });

  it('batch answers ids in order; cancel cancels a scheduled one and 409s a sent one', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const later = new Date(Date.now() + 3600_000).toISOString();
    const { data } = await tern.emails.batch([{ ...email, scheduledAt: later }, email]);
    expect(data).toHaveLength(2);
    expect(await tern.emails.cancel(data[0]!.id)).toEqual({ id: data[0]!.id, status: 'CANCELLED' });
    await waitFor(async () => (await tern.emails.get(data[1]!.id)).status === 'DELIVERED');
    const refused = await tern.emails.cancel(data[1]!.id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TernApiError);
    expect((refused as TernApiError).status).toBe(409);
  });

  it('the same idempotencyKey sends once; a lost answer is retried with the same key and sends once', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const a = await tern.emails.send(email, { idempotencyKey: 'order-42' });
    const b = await tern.emails.send(email, { idempotencyKey: 'order-42' });
    expect(b).toEqual(a);

    // The first answer is lost (the server did the work, the client saw a 503): the retry reuses the key.
    const keys: string[] = [];
    let lost = false;
    const lossyFetch: FetchLike = async (url, requestInit) => {
      const res = await fetch(url, requestInit);
      keys.push(new Headers(requestInit?.headers).get('idempotency-key') ?? '');
      if (!lost) {
        lost = true;
        return new Response('{"statusCode":503,"error":"Service Unavailable","message":"lost"}', {
          status: 503,
        });
      }
      return res;
    };
    const flaky = init({ apiKey: key, baseUrl, fetch: lossyFetch, retryBaseDelayMs: 5 });
    const before = await world.stores.pool.query(
      'SELECT count(*)::int AS n FROM outgoing_emails WHERE tenant_id = $1',
      [TENANT],
    );
    const { id } = await flaky.emails.send({ ...email, subject: 'once' });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^sdk_[A-Za-z0-9]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    const after = await world.stores.pool.query(
      'SELECT count(*)::int AS n FROM outgoing_emails WHERE tenant_id = $1',
      [TENANT],
    );
    expect(after.rows[0].n - before.rows[0].n).toBe(1);
    expect(id).toMatch(/^em_/);
  });

  it('a 400 names the field', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const error = (await tern.emails.send({ ...email, to: 'nope' }).catch((e: unknown) => e)) as TernApiError;
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/to/);
  });

  it('several recipients (SPEC §22): one id; each recipient its own outcome; a suppressed one dropped and listed SUPPRESSED; Resend-style tags', async () => {
    const tern = init({ apiKey: key, baseUrl });
    await world.stores.pool.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source) VALUES ($1, 'blocked@example.com', 'manual', 'manual')
       ON CONFLICT DO NOTHING`,
      [TENANT],
    );
    const { id } = await tern.emails.send({
      ...email,
      to: ['delivered@sandbox.test', 'bounced@sandbox.test'],
      cc: ['blocked@example.com'],
      bcc: ['complained@sandbox.test'],
      tags: ['plain', { name: 'category', value: 'invoice' }],
    });
    const detail = await waitFor(async () => {
      const d = await tern.emails.get(id);
      return d.status === 'BOUNCED' && d.events.some((e) => e.type === 'email.complained') ? d : null;
    });
    expect(detail).toMatchObject({
      toEmail: 'delivered@sandbox.test',
      // The fold of all its events: one recipient bounced.
      status: 'BOUNCED',
      tags: ['plain', 'category:invoice'],
      to: ['delivered@sandbox.test', 'bounced@sandbox.test'],
      cc: ['blocked@example.com'],
      bcc: ['complained@sandbox.test'],
      recipients: [
        { email: 'delivered@sandbox.test', type: 'to', status: 'DELIVERED' },
        { email: 'bounced@sandbox.test', type: 'to', status: 'BOUNCED' },
        { email: 'blocked@example.com', type: 'cc', status: 'SUPPRESSED' },
        { email: 'complained@sandbox.test', type: 'bcc', status: 'DELIVERED' },
      ],
    });
    // Each outcome names its recipient; the message's own events name none.
    expect(detail.events.map((e) => [e.type, e.data.recipient])).toEqual(
      expect.arrayContaining([
        ['email.queued', undefined],
        ['email.suppressed', 'blocked@example.com'],
        ['email.sent', undefined],
        ['email.bounced', 'bounced@sandbox.test'],
        ['email.complained', 'complained@sandbox.test'],
      ]),
    );
    // The sandbox got it without the suppressed address; hard bounce and complaint suppress their own address only.
    const content = await world.app.inject({
      method: 'GET',
      url: `/emails/${id}/content`,
      headers: bearer(key),
    });
    expect(content.json()).toMatchObject({ to: ['delivered@sandbox.test', 'bounced@sandbox.test'], cc: [] });
    const suppressed = await waitFor(async () => {
      const { rows } = await world.stores.pool.query<{ email: string }>(
        'SELECT email FROM suppressions WHERE tenant_id = $1 ORDER BY email',
        [TENANT],
      );
      return rows.length === 3 ? rows.map((r) => r.email) : null;
    });
    expect(suppressed).toEqual(['blocked@example.com', 'bounced@sandbox.test', 'complained@sandbox.test']);
  });

  it('bad recipients → 400 with a code, nothing queued: 51 addresses, an empty array, a bad address in the array', async () => {
    const tern = init({ apiKey: key, baseUrl });
    const cases: [Parameters<typeof tern.emails.send>[0], RegExp][] = [
      [{ ...email, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.com`) }, /at most 50/],
      [
        { ...email, to: ['a@example.com'], cc: Array.from({ length: 50 }, (_, i) => `c${i}@example.com`) },
        /together \(got 51\)/,
      ],
      [{ ...email, to: [] }, /at least 1/],
      [{ ...email, to: ['a@example.com', 'not an address'] }, /body\.to\.1/],
    ];
    for (const [body, message] of cases) {
      const error = (await tern.emails.send(body).catch((e: unknown) => e)) as TernApiError;
      expect(error).toBeInstanceOf(TernApiError);
      expect(error.status).toBe(400);
      expect(error.code).toBe('FST_ERR_VALIDATION');
      expect(error.message).toMatch(message);
    }
    const batch = (await tern.emails
      .batch([email, { ...email, to: [] }])
      .catch((e: unknown) => e)) as TernApiError;
    expect(batch.status).toBe(400);
    expect(batch.message).toMatch(/body\.1\.to/);
  });
});
