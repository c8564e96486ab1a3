import type { DeliveryEvent } from '@tern/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import {
  emailStatus,
  type Happening,
  notification,
  openProviderWorld,
  type ProviderKind,
  type ProviderSenders,
  postNotification,
  sentEmail,
} from '../providers-support.js';
import { type SendingWorld, wallClock } from '../sending-support.js';
import { bearer, buildApp, closeAll, jwtFor, project, suffix } from '../support.js';

// SPEC §21, provider notifications: each of the five routes over a real socket, on the real app,
// the Postgres-table event log, the real projector and Postgres. The providers' side (keys, SNS
// certificate served over HTTPS, signatures) is in providers-support.ts.
describe('provider notifications', () => {
  const PROVIDERS: ProviderKind[] = ['ses', 'sendgrid', 'postmark', 'mailgun', 'resend'];

  let world: SendingWorld;
  let senders: ProviderSenders;
  let base: string;
  const run = suffix();
  const A = `prov-a-${run}`;
  const B = `prov-b-${run}`;
  let n = 0;

  beforeAll(async () => {
    ({ senders, world, base } = await openProviderWorld());
  }, 60_000);

  afterAll(() => closeAll(world, senders));

  async function seed(tenantId: string, relay = true) {
    const emailId = `em_${run}_${++n}`;
    const relayId = relay ? `relay-${run}-${n}` : undefined;
    await project(world.stores, sentEmail(tenantId, emailId, relayId));
    return { emailId, messageId: `${emailId}@tern.test`, relayId };
  }

  /** The id a provider names the message by: its own id where it has one (SES, SendGrid, Postmark, Resend), else the Message-ID. */
  const idFor = (provider: ProviderKind, e: { messageId: string; relayId: string | undefined }) =>
    provider === 'mailgun' ? e.messageId : (e.relayId ?? e.messageId);

  const post = (provider: ProviderKind, body: string, headers: Record<string, string>) =>
    postNotification(base, provider, body, headers);

  async function send(
    provider: ProviderKind,
    happening: Happening,
    messageId: string,
    eventId: string,
    ua?: string,
  ) {
    const { body, headers } = notification(senders, provider, happening, messageId, eventId, ua);
    return post(provider, body, headers);
  }

  const statusOf = (tenantId: string, emailId: string) => emailStatus(world.stores.pool, tenantId, emailId);

  async function timeline(tenantId: string, emailId: string) {
    const { rows } = await world.stores.pool.query<{ type: string; data: Record<string, unknown> }>(
      'SELECT type, data FROM email_events WHERE tenant_id = $1 AND email_id = $2 ORDER BY occurred_at, event_id',
      [tenantId, emailId],
    );
    return rows;
  }

  const waitStatus = (tenantId: string, emailId: string, status: string) =>
    waitFor(async () => (await statusOf(tenantId, emailId)) === status, {
      timeoutMs: 15_000,
      description: `${emailId} ${status}`,
    });

  describe.each(PROVIDERS)('POST /providers/%s', (provider) => {
    it('a hard bounce delivered twice is one event; the email is BOUNCED and its address suppressed', async () => {
      const email = await seed(A);
      const eventId = `evt-${run}-${++n}`;
      const first = await send(provider, 'hard_bounce', idFor(provider, email), eventId);
      const again = await send(provider, 'hard_bounce', idFor(provider, email), eventId);
      expect(first).toEqual({ status: 200, body: { received: 1, applied: 1, ignored: 0 } });
      expect(again.status).toBe(200);
      await waitStatus(A, email.emailId, 'BOUNCED');
      // A later event proves the projector has passed the redelivery.
      await send(provider, 'open', idFor(provider, email), `evt-${run}-${++n}`);
      await waitFor(async () => (await timeline(A, email.emailId)).some((e) => e.type === 'email.opened'));
      const bounces = (await timeline(A, email.emailId)).filter((e) => e.type === 'email.bounced');
      expect(bounces).toHaveLength(1);
      expect(bounces[0]?.data).toMatchObject({ bounceType: 'hard' });
      if (provider !== 'postmark' && provider !== 'resend') expect(bounces[0]?.data.smtpStatus).toBe('5.1.1');
      const suppressed = await world.stores.pool.query(
        'SELECT reason FROM suppressions WHERE tenant_id = $1 AND email = $2',
        [A, `${email.emailId}@example.com`],
      );
      expect(suppressed.rowCount).toBe(1);
    });

    it('delivered → DELIVERED; a complaint is recorded and suppresses', async () => {
      const email = await seed(A);
      expect((await send(provider, 'delivered', idFor(provider, email), `evt-${run}-${++n}`)).status).toBe(
        200,
      );
      await waitStatus(A, email.emailId, 'DELIVERED');
      expect((await send(provider, 'complaint', idFor(provider, email), `evt-${run}-${++n}`)).status).toBe(
        200,
      );
      await waitFor(async () =>
        (await timeline(A, email.emailId)).some((e) => e.type === 'email.complained'),
      );
      const suppressed = await world.stores.pool.query(
        'SELECT 1 FROM suppressions WHERE tenant_id = $1 AND email = $2',
        [A, `${email.emailId}@example.com`],
      );
      expect(suppressed.rowCount).toBe(1);
    });

    it('an Apple Mail Privacy Protection prefetch is a machine open, reported apart; a reader’s is not', async () => {
      const tenant = `${A}-m-${provider}`;
      const email = await seed(tenant);
      await send(provider, 'open', idFor(provider, email), `evt-${run}-${++n}`, 'Mozilla/5.0');
      await send(provider, 'open', idFor(provider, email), `evt-${run}-${++n}`);
      const opens = await waitFor(async () => {
        const list = (await timeline(tenant, email.emailId)).filter((e) => e.type === 'email.opened');
        return list.length === 2 ? list : null;
      });
      expect(opens.filter((o) => o.data.machine === true)).toHaveLength(1);
      const { rows } = await world.stores.pool.query<{
        state: { openCount: number; machineOpenCount: number };
      }>('SELECT state FROM email_logs WHERE tenant_id = $1 AND id = $2', [tenant, email.emailId]);
      expect(rows[0]?.state).toMatchObject({ openCount: 1, machineOpenCount: 1 });
      // Analytics (SPEC §21): the email is opened once by a person and once by a machine, counted apart.
      const totals = await waitFor(async () => {
        const res = await world.app.inject({
          // Two UTC days: the email was seeded by the wall clock, perhaps just before midnight.
          url: '/analytics/summary?days=2',
          headers: bearer(jwtFor(wallClock, tenant)),
        });
        const body = res.json() as { totals: Record<string, number> };
        // Both opens counted (they may reach the rollup in two flushes, either first).
        return body.totals.machineOpened === 1 && body.totals.opened === 1 ? body.totals : null;
      });
      expect(totals).toMatchObject({ total: 1, opened: 1, machineOpened: 1 });
    });

    it('a message id two tenants’ emails share applies to neither; another tenant’s own id only to its email', async () => {
      // The same email id in A and B, so the same Message-ID `<id@tern.test>`, without a relay id.
      const emailId = `em_${run}_shared_${++n}`;
      await project(world.stores, [
        ...sentEmail(A, emailId),
        ...sentEmail(B, emailId, `relay-${run}-b-${n}`),
      ]);
      const shared = await send(provider, 'hard_bounce', `${emailId}@tern.test`, `evt-${run}-${++n}`);
      expect(shared).toEqual({ status: 200, body: { received: 1, applied: 0, ignored: 1 } });
      const unknown = await send(provider, 'hard_bounce', `nobody-${run}@tern.test`, `evt-${run}-${++n}`);
      expect(unknown.body).toMatchObject({ applied: 0, ignored: 1 });
      if (provider !== 'mailgun') {
        // B's relay id reaches B's email and no other.
        await send(provider, 'delivered', `relay-${run}-b-${n - 2}`, `evt-${run}-${++n}`);
        await waitStatus(B, emailId, 'DELIVERED');
      }
      expect(await statusOf(A, emailId)).toBe('SENT');
      expect((await timeline(A, emailId)).map((e) => e.type)).toEqual(['email.queued', 'email.sent']);
      expect((await timeline(B, emailId)).some((e) => e.type === 'email.bounced')).toBe(false);
    });

    it('forged or unsigned → 401 and nothing appended', async () => {
      const email = await seed(A);
      const id = idFor(provider, email);
      const { body, headers } = notification(senders, provider, 'hard_bounce', id, `evt-${run}-${++n}`);
      const forgeries: { body: string; headers: Record<string, string> }[] = [];
      switch (provider) {
        case 'ses': {
          const signed = JSON.parse(body) as Record<string, string>;
          forgeries.push({
            body: JSON.stringify({ ...signed, Message: signed.Message?.replace('Permanent', 'Transient') }),
            headers,
          });
          forgeries.push({ body: JSON.stringify({ ...signed, Signature: undefined }), headers });
          // A certificate from any other host is never fetched.
          const offHost = senders.sns(
            { Type: 'Notification', Message: signed.Message ?? '' },
            { certUrl: 'https://sns.eu-west-1.amazonaws.com.evil.test/cert.pem' },
          );
          forgeries.push({ body: JSON.stringify(offHost), headers });
          forgeries.push({
            body: JSON.stringify({ ...signed, TopicArn: 'arn:aws:sns:eu-west-1:999999999999:other' }),
            headers,
          });
          break;
        }
        case 'sendgrid':
          forgeries.push({ body: body.replace('bounce', 'bounce '), headers });
          forgeries.push({ body, headers: { 'content-type': 'application/json' } });
          break;
        case 'postmark':
          forgeries.push({ body, headers: senders.postmarkHeaders('wrong-password-0123456789') });
          forgeries.push({ body, headers: { 'content-type': 'application/json' } });
          break;
        case 'mailgun': {
          const parsed = JSON.parse(body) as { signature: object };
          forgeries.push({
            body: JSON.stringify({
              ...parsed,
              signature: senders.mailgunSignature('another-key-0123456789abcdef'),
            }),
            headers,
          });
          forgeries.push({ body: JSON.stringify({ ...parsed, signature: undefined }), headers });
          break;
        }
        case 'resend':
          forgeries.push({ body: body.replace('email.bounced', 'email.complained'), headers });
          forgeries.push({ body, headers: { 'content-type': 'application/json' } });
          break;
      }
      for (const forged of forgeries) {
        const res = await post(provider, forged.body, forged.headers);
        expect(res.status, forged.body.slice(0, 80)).toBe(401);
        expect(res.body.code).toBe('INVALID_CREDENTIAL');
      }
      // Then a genuine notification: once it is folded, the forgeries (appended before it, if at all) would be too.
      await send(provider, 'delivered', id, `evt-${run}-${++n}`);
      await waitStatus(A, email.emailId, 'DELIVERED');
      expect((await timeline(A, email.emailId)).map((e) => e.type)).toEqual([
        'email.queued',
        'email.sent',
        'email.delivered',
      ]);
    });
  });

  describe('POST /providers/ses: the SNS subscription', () => {
    it('a signed SubscriptionConfirmation is confirmed at its SubscribeURL; a forged one is not', async () => {
      const token = `tok-${run}`;
      const message = senders.sns({
        Type: 'SubscriptionConfirmation',
        Message: 'You have chosen to subscribe to the topic',
        Token: token,
        SubscribeURL: `${senders.httpsBase}/confirm?Token=${token}`,
      });
      const forged = { ...message, SubscribeURL: `${senders.httpsBase}/confirm?Token=forged` };
      expect((await post('ses', JSON.stringify(forged), { 'content-type': 'text/plain' })).status).toBe(401);
      const res = await post('ses', JSON.stringify(message), { 'content-type': 'text/plain' });
      expect(res).toEqual({ status: 200, body: { received: 0, applied: 0, ignored: 0 } });
      expect(senders.confirmations).toEqual([`/confirm?Token=${token}`]);
    });

    it('a body that is not an SNS message → 401', async () => {
      for (const body of ['not json', '{}', JSON.stringify({ Type: 'Notification' })]) {
        expect((await post('ses', body, { 'content-type': 'text/plain' })).status).toBe(401);
      }
    });
  });

  describe('provider routes: configuration and bad input', () => {
    it('a provider whose credential is unset has no route (404)', async () => {
      const app = await buildApp(world.stores, wallClock, {
        limits: { rateLimit: false },
        features: {
          sending: { log: world.log },
          providers: { mailgunSigningKey: 'mailgun-signing-key-0123456789abcdef' },
        },
      });
      try {
        for (const provider of ['ses', 'sendgrid', 'postmark', 'resend']) {
          const res = await app.inject({ method: 'POST', url: `/providers/${provider}`, payload: {} });
          expect(res.statusCode, provider).toBe(404);
        }
      } finally {
        await app.close();
      }
    });

    it('a verified body that is not JSON → 400 BAD_REQUEST, over a socket', async () => {
      const res = await post('postmark', '{"RecordType":', senders.postmarkHeaders());
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('BAD_REQUEST');
    });
  });

  describe('a burst of 10 000 notifications', () => {
    it('through the five routes at once: every one applied, none lost', async () => {
      const PER = 2000;
      const emails: { tenantId: string; emailId: string; messageId: string; relayId: string }[] = [];
      const seedEvents: DeliveryEvent[] = [];
      for (let i = 0; i < PER * PROVIDERS.length; i++) {
        const emailId = `em_${run}_burst_${i}`;
        const relayId = `relay-${run}-burst-${i}`;
        emails.push({ tenantId: A, emailId, messageId: `${emailId}@tern.test`, relayId });
        seedEvents.push(...sentEmail(A, emailId, relayId));
      }
      await project(world.stores, seedEvents);

      const requests: { provider: ProviderKind; body: string; headers: Record<string, string> }[] = [];
      PROVIDERS.forEach((provider, p) => {
        const mine = emails.slice(p * PER, (p + 1) * PER);
        if (provider === 'sendgrid') {
          // SendGrid posts its events in batches.
          for (let i = 0; i < mine.length; i += 100) {
            const events = mine.slice(i, i + 100).map((e) => {
              const one = notification(
                senders,
                provider,
                'delivered',
                idFor(provider, e),
                `evt-burst-${e.emailId}`,
              );
              return (JSON.parse(one.body) as unknown[])[0];
            });
            const body = JSON.stringify(events);
            requests.push({ provider, body, headers: senders.sendgridHeaders(body) });
          }
        } else {
          for (const e of mine) {
            requests.push({
              provider,
              ...notification(senders, provider, 'delivered', idFor(provider, e), `evt-burst-${e.emailId}`),
            });
          }
        }
      });
      let applied = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < requests.length) {
            const r = requests[next++]!;
            const res = await post(r.provider, r.body, r.headers);
            expect(res.status).toBe(200);
            applied += Number(res.body.applied);
          }
        }),
      );
      expect(applied).toBe(PER * PROVIDERS.length);
      await waitFor(
        async () => {
          const { rows } = await world.stores.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = $1 AND id LIKE $2 AND status = 'DELIVERED'`,
            [A, `em_${run}_burst_%`],
          );
          return rows[0]?.n === PER * PROVIDERS.length;
        },
        { timeoutMs: 90_000, description: 'every burst email DELIVERED' },
      );
    }, 300_000);
  });
});

// Issue 40 items 4 and 11 (Postmark): provider notifications replayed, dated long ago, or cut
// mid-emoji — over a real socket, on the real app, the Postgres-table log and the real projector.
describe('provider notifications replayed', () => {
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
      const suppressed = await world.stores.pool.query('SELECT 1 FROM suppressions WHERE tenant_id = $1', [
        T,
      ]);
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
      expect((await post('sendgrid', body, senders.sendgridHeaders(body))).body).toMatchObject({
        applied: 1,
      });
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
});
