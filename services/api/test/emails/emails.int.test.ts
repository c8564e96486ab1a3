import { signLegacyTrackingToken, signTrackingToken } from '@tern/auth';
import type { MailProvider, ProviderResult } from '@tern/sender';
import { createTenantSettingsCache } from '@tern/tenant-settings';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import {
  getEmail,
  openSendingWorld,
  PUBLIC_URL,
  type SendingWorld,
  TRACKING_SECRET,
  waitForStatus,
  wallClock,
} from '../sending-support.js';
import {
  bearer,
  closeAll,
  createKey,
  createProject,
  jwtFor,
  openApp,
  type Stores,
  suffix,
} from '../support.js';

describe('emails', () => {
  let world: SendingWorld;
  const run = suffix();
  const A = `send-a-${run}`;
  const B = `send-b-${run}`;
  let ownerA: string;
  let ownerB: string;
  let sendKeyA: string;
  let readKeyA: string;

  const FROM = 'Acme <hello@acme.test>';
  const body = (over: Record<string, unknown> = {}) => ({
    from: FROM,
    to: 'delivered@sandbox.test',
    subject: 'Hello',
    html: '<p>Hi <a href="https://example.com/offer?a=1&amp;b=2">offer</a> <a href="mailto:x@y.z">mail</a></p>',
    text: 'Hi',
    ...over,
  });

  const send = (payload: unknown, auth = sendKeyA, headers: Record<string, string> = {}) =>
    world.app.inject({
      method: 'POST',
      url: '/emails/send',
      headers: { ...bearer(auth), ...headers },
      payload: payload as object,
    });

  async function sent(payload: unknown, auth = sendKeyA): Promise<string> {
    const res = await send(payload, auth);
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json() as { id: string };
    return id;
  }

  const outgoingCount = async (tenant: string) =>
    Number(
      (
        await world.stores.pool.query('SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1', [
          tenant,
        ])
      ).rows[0].n,
    );

  beforeAll(async () => {
    world = await openSendingWorld();
    ownerA = jwtFor(wallClock, A);
    ownerB = jwtFor(wallClock, B);
    sendKeyA = (await createKey(world.app, ownerA, A, { scopes: ['email:send'] })).key;
    readKeyA = (await createKey(world.app, ownerA, A, { scopes: ['email:read'] })).key;
  }, 120_000);

  afterAll(async () => {
    await world?.close();
  });

  describe('POST /emails/send', () => {
    describe('202', () => {
      it('queues the email and the sandbox delivers it: QUEUED → SENT → DELIVERED on the timeline', async () => {
        const id = await sent(
          body({ cc: ['cc@example.com'], tags: ['welcome'], headers: { 'X-Campaign': 'c1' } }),
        );
        expect(id).toMatch(/^em_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}$/);
        const email = await waitForStatus(world.app, readKeyA, id, 'DELIVERED', ['email.delivered']);
        // To and Cc: two recipients, each delivered on its own (SPEC §22).
        expect(email.events.map((e) => [e.type, e.data.recipient])).toEqual([
          ['email.queued', undefined],
          ['email.sent', undefined],
          ['email.delivered', 'delivered@sandbox.test'],
          ['email.delivered', 'cc@example.com'],
        ]);
        expect(email).toMatchObject({
          toEmail: 'delivered@sandbox.test',
          subject: 'Hello',
          from: FROM,
          cc: ['cc@example.com'],
          bcc: [],
          provider: 'sandbox',
          messageId: `<${id}@127.0.0.1>`,
          scheduledAt: null,
        });
        // It is in the delivery log too.
        const logs = await world.app.inject({ url: '/emails/logs', headers: bearer(readKeyA) });
        expect(logs.json().data.find((d: { id: string }) => d.id === id)).toMatchObject({
          status: 'DELIVERED',
        });
      });

      it.each([
        ['bounced@sandbox.test', 'BOUNCED', ['email.queued', 'email.sent', 'email.bounced']],
        [
          'complained@sandbox.test',
          'DELIVERED',
          ['email.queued', 'email.sent', 'email.delivered', 'email.complained'],
        ],
        [
          'delayed@sandbox.test',
          'DELIVERED',
          ['email.queued', 'email.delayed', 'email.sent', 'email.delivered'],
        ],
        ['failed@sandbox.test', 'FAILED', ['email.queued', 'email.failed']],
      ])('sandbox outcome of %s → %s', async (to, status, types) => {
        const id = await sent(body({ to }));
        const email = await waitForStatus(world.app, readKeyA, id, status, types);
        expect(email.events.map((e) => e.type)).toEqual(types);
        if (to.startsWith('bounced')) expect(email.events[2]?.data).toMatchObject({ bounceType: 'hard' });
      });

      it('a suppressed recipient is never handed to the provider: SUPPRESSED, reason suppressed', async () => {
        await world.stores.pool.query(
          `INSERT INTO suppressions (tenant_id, email, reason, source) VALUES ($1, 'blocked@example.com', 'x', 'manual')`,
          [A],
        );
        const id = await sent(body({ to: 'Blocked@Example.com' }));
        const email = await waitForStatus(world.app, readKeyA, id, 'SUPPRESSED');
        expect(email.events.at(-1)).toMatchObject({
          type: 'email.suppressed',
          data: { reason: 'suppressed' },
        });
        const content = await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKeyA) });
        expect(content.statusCode).toBe(404);
      });

      it('a scheduled send whose recipient is erased before it is due is never handed to the provider', async () => {
        const id = await sent(
          body({ to: 'Later.Erased@example.com', scheduledAt: new Date(Date.now() + 2000).toISOString() }),
        );
        // Projected (this world's log is not sealed: the entry must exist before the erasure).
        await waitFor(
          async () =>
            (
              await world.stores.pool.query(
                'SELECT 1 FROM email_logs WHERE tenant_id = $1 AND id = $2 AND created_at IS NOT NULL',
                [A, id],
              )
            ).rowCount === 1,
        );
        const erased = await world.app.inject({
          method: 'POST',
          url: '/contacts/erase',
          headers: bearer(ownerA),
          payload: { email: 'later.erased@example.com' },
        });
        expect(erased.statusCode).toBe(202);
        expect(erased.json().counts).toMatchObject({ emails: 1 });
        const email = await waitForStatus(world.app, readKeyA, id, 'SUPPRESSED');
        expect(email.events.at(-1)).toMatchObject({
          type: 'email.suppressed',
          data: { reason: 'recipient erased' },
        });
        expect(email).toMatchObject({ toEmail: null, subject: null });
        const { rows } = await world.stores.pool.query(
          'SELECT message FROM outgoing_emails WHERE tenant_id = $1 AND id = $2',
          [A, id],
        );
        // The content is gone; the sender (the tenant's own address) stays.
        expect(rows[0].message).toEqual({ erased: true, from: FROM });
        // The sandbox provider keeps every message handed to it: none for this email.
        const handed = await world.stores.pool.query(
          'SELECT 1 FROM sandbox_messages WHERE tenant_id = $1 AND email_id = $2',
          [A, id],
        );
        expect(handed.rowCount).toBe(0);
        const content = await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKeyA) });
        expect(content.statusCode).toBe(404);
      });

      it('a hard bounce puts the address on the suppression list; the next send to it is SUPPRESSED', async () => {
        const first = await sent(body({ to: 'bounced@sandbox.test' }), ownerB);
        await waitForStatus(world.app, ownerB, first, 'BOUNCED');
        const listed = await waitFor(async () => {
          const res = await world.app.inject({ url: '/suppressions', headers: bearer(ownerB) });
          return (res.json() as { data: { email: string; source: string }[] }).data.find(
            (s) => s.email === 'bounced@sandbox.test',
          );
        });
        expect(listed).toMatchObject({ source: 'bounce' });
        const second = await sent(body({ to: 'Bounced@Sandbox.test' }), ownerB);
        const email = await waitForStatus(world.app, ownerB, second, 'SUPPRESSED');
        expect(email.events.map((e) => e.type)).toEqual(['email.queued', 'email.suppressed']);
      });

      it('renders a template with variables: missing → empty, HTML-escaped in html only', async () => {
        await world.stores.pool.query(
          `INSERT INTO templates (tenant_id, id, name, subject, html, text)
         VALUES ($1, 'welcome', 'Welcome', 'Hello {{name}}', '<p>Hi {{ name }}{{missing}}</p>', 'Hi {{name}}')`,
          [A],
        );
        const id = await sent({
          from: FROM,
          to: 'ada@example.com',
          templateId: 'welcome',
          variables: { name: '<Ada>' },
        });
        const email = await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
        expect(email.subject).toBe('Hello <Ada>');
        const content = (
          await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKeyA) })
        ).json();
        expect(content.subject).toBe('Hello <Ada>');
        expect(content.html).toMatch(/^<p>Hi &lt;Ada&gt;<\/p><img src=/);
        expect(content.text).toBe('Hi <Ada>');
      });

      it('accepts a dashboard JWT of any tenant admin', async () => {
        const id = await sent(body(), ownerA);
        await waitForStatus(world.app, ownerA, id, 'DELIVERED');
      });
    });

    describe('400', () => {
      const inOneHour = () => new Date(Date.now() + 3600_000).toISOString();
      it.each([
        [{ to: 'not-an-address' }, /body\.to/],
        [{ to: [] }, /to must have at least 1 address/],
        [{ to: ['a@example.com', 'nope'] }, /body\.to\.1/],
        [{ to: 5 }, /to must be an email address or an array/],
        [{ to: Array.from({ length: 51 }, (_, i) => `t${i}@example.com`) }, /at most 50 addresses together/],
        [
          {
            to: Array.from({ length: 30 }, (_, i) => `t${i}@example.com`),
            bcc: Array.from({ length: 21 }, (_, i) => `b${i}@example.com`),
          },
          /at most 50 addresses together \(got 51\)/,
        ],
        [{ tags: [{ name: 'k' }] }, /body\.tags/],
        [{ tags: [{ name: 'k'.repeat(200), value: 'v'.repeat(60) }] }, /name:value must be at most 256/],
        [{ from: 'Acme <nope>' }, /body\.from/],
        [{ subject: undefined }, /subject is required/],
        [{ html: undefined, text: undefined }, /html or text is required/],
        [{ cc: Array.from({ length: 51 }, (_, i) => `c${i}@example.com`) }, /cc must have at most 50/],
        [{ bcc: ['x'] }, /body\.bcc/],
        [{ scheduledAt: '2020-01-01T00:00:00Z' }, /scheduledAt must be in the future/],
        [{ scheduledAt: new Date(Date.now() + 31 * 86_400_000).toISOString() }, /at most 30 days ahead/],
        [{ scheduledAt: 'tomorrow' }, /scheduledAt/],
        [{ html: 'x'.repeat(256 * 1024 + 1) }, /256 KiB/],
        [{ headers: { 'Message-ID': '<x@y>' } }, /headers must not set/],
        [{ headers: { 'X-A': 'a\r\nBcc: victim@example.com' } }, /line breaks/],
        [{ templateId: 'no-such-template' }, /template no-such-template not found/],
        [{ unknown: 1 }, /unknown/],
      ])('%j', async (over, message) => {
        const before = await outgoingCount(A);
        const payload = { ...body(), ...over };
        for (const [k, v] of Object.entries(over))
          if (v === undefined) delete (payload as Record<string, unknown>)[k];
        const res = await send(payload);
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().message).toMatch(message);
        expect(await outgoingCount(A)).toBe(before);
        void inOneHour;
      });
    });

    describe('401', () => {
      it('without a credential', async () => {
        const res = await world.app.inject({ method: 'POST', url: '/emails/send', payload: body() });
        expect(res.statusCode).toBe(401);
      });
    });

    describe('403', () => {
      it('for a key without email:send', async () => {
        const res = await send(body(), readKeyA);
        expect(res.statusCode).toBe(403);
        expect(res.json().message).toBe('Missing required API key scope');
      });
    });
  });

  describe('Idempotency-Key', () => {
    it('the same key and body answer the first response again and queue nothing new', async () => {
      const key = `k-${suffix()}`;
      const first = await send(body({ subject: 'Idem' }), sendKeyA, { 'idempotency-key': key });
      expect(first.statusCode).toBe(202);
      const before = await outgoingCount(A);
      const again = await send(body({ subject: 'Idem' }), sendKeyA, { 'idempotency-key': key });
      expect(again.statusCode).toBe(202);
      expect(again.json()).toEqual(first.json());
      expect(await outgoingCount(A)).toBe(before);
    });

    it('the same key with another body → 409, nothing queued', async () => {
      const key = `k-${suffix()}`;
      expect((await send(body(), sendKeyA, { 'idempotency-key': key })).statusCode).toBe(202);
      const before = await outgoingCount(A);
      const other = await send(body({ subject: 'Other' }), sendKeyA, { 'idempotency-key': key });
      expect(other.statusCode).toBe(409);
      expect(other.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await outgoingCount(A)).toBe(before);
    });

    it('concurrent duplicates send once and all get the same id', async () => {
      const key = `k-${suffix()}`;
      const before = await outgoingCount(A);
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          send(body({ subject: 'Parallel' }), sendKeyA, { 'idempotency-key': key }),
        ),
      );
      expect(answers.map((a) => a.statusCode)).toEqual(Array(12).fill(202));
      const ids = new Set(answers.map((a) => a.json().id));
      expect(ids.size).toBe(1);
      expect(await outgoingCount(A)).toBe(before + 1);
      const [id] = [...ids] as [string];
      const email = await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      expect(email.events.filter((e) => e.type === 'email.sent')).toHaveLength(1);
    });

    it('is per tenant: the same key in another tenant is another email', async () => {
      const key = `k-${suffix()}`;
      const a = await send(body(), sendKeyA, { 'idempotency-key': key });
      const b = await send(body(), ownerB, { 'idempotency-key': key });
      expect(a.statusCode).toBe(202);
      expect(b.statusCode).toBe(202);
      expect(a.json().id).not.toBe(b.json().id);
    });

    it('expires after 24 h', async () => {
      const key = `k-${suffix()}`;
      const first = await send(body(), sendKeyA, { 'idempotency-key': key });
      await world.stores.pool.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE tenant_id = $1 AND key = $2`,
        [A, key],
      );
      const later = await send(body(), sendKeyA, { 'idempotency-key': key });
      expect(later.statusCode).toBe(202);
      expect(later.json().id).not.toBe(first.json().id);
    });

    it('a key longer than 256 characters → 400', async () => {
      const res = await send(body(), sendKeyA, { 'idempotency-key': 'k'.repeat(257) });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/idempotency-key/i);
    });

    it('applies to batches too', async () => {
      const key = `k-${suffix()}`;
      const payload = [body(), body({ to: 'two@example.com' })];
      const post = () =>
        world.app.inject({
          method: 'POST',
          url: '/emails/batch',
          headers: { ...bearer(sendKeyA), 'idempotency-key': key },
          payload,
        });
      const [one, two] = await Promise.all([post(), post()]);
      expect(one.json()).toEqual(two.json());
      expect(one.json().data).toHaveLength(2);
    });
  });

  describe('POST /emails/batch', () => {
    it('202: ids in input order, each delivered', async () => {
      const res = await world.app.inject({
        method: 'POST',
        url: '/emails/batch',
        headers: bearer(sendKeyA),
        payload: [
          body({ subject: 'b0' }),
          body({ subject: 'b1', to: 'failed@sandbox.test' }),
          body({ subject: 'b2' }),
        ],
      });
      expect(res.statusCode, res.body).toBe(202);
      const { data } = res.json() as { data: { id: string }[] };
      expect(data).toHaveLength(3);
      const subjects = [];
      for (const { id } of data)
        subjects.push((await waitFor(() => getEmail(world.app, readKeyA, id)))!.subject);
      expect(subjects).toEqual(['b0', 'b1', 'b2']);
      await waitForStatus(world.app, readKeyA, data[1]!.id, 'FAILED');
    });

    it('400 lists the invalid indexes; nothing is queued', async () => {
      const before = await outgoingCount(A);
      const res = await world.app.inject({
        method: 'POST',
        url: '/emails/batch',
        headers: bearer(sendKeyA),
        payload: [body(), body({ to: 'x' }), body(), body({ scheduledAt: '2020-01-01T00:00:00Z' })],
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/body\.1\.to/);
      expect(await outgoingCount(A)).toBe(before);
      const past = await world.app.inject({
        method: 'POST',
        url: '/emails/batch',
        headers: bearer(sendKeyA),
        payload: [body(), body({ scheduledAt: '2020-01-01T00:00:00Z' })],
      });
      expect(past.statusCode).toBe(400);
      expect(past.json().message).toMatch(/body\.1\.scheduledAt/);
      expect(await outgoingCount(A)).toBe(before);
    });

    it.each([[[]], [Array.from({ length: 101 }, () => body())]])(
      '400 for %# emails out of 1..100',
      async (payload) => {
        const res = await world.app.inject({
          method: 'POST',
          url: '/emails/batch',
          headers: bearer(sendKeyA),
          payload,
        });
        expect(res.statusCode).toBe(400);
      },
    );
  });

  describe('scheduled mail and POST /emails/:id/cancel', () => {
    const cancel = (id: string, auth = readKeyA) =>
      world.app.inject({ method: 'POST', url: `/emails/${id}/cancel`, headers: bearer(auth) });

    it('SCHEDULED until due, then handed to the provider and DELIVERED', async () => {
      const at = new Date(Date.now() + 1500).toISOString();
      const id = await sent(body({ scheduledAt: at }));
      const scheduled = await waitForStatus(world.app, readKeyA, id, 'SCHEDULED', ['email.queued']);
      expect(scheduled.scheduledAt).toBe(at);
      const delivered = await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      const sentAt = Date.parse(delivered.events.find((e) => e.type === 'email.sent')!.occurredAt);
      expect(sentAt).toBeGreaterThanOrEqual(Date.parse(at));
      expect(sentAt - Date.parse(at)).toBeLessThan(5_000);
    });

    it('200 CANCELLED: it is never sent; cancelling again → 200', async () => {
      const id = await sent(body({ scheduledAt: new Date(Date.now() + 3600_000).toISOString() }));
      const res = await cancel(id);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ id, status: 'CANCELLED' });
      const email = await waitForStatus(world.app, readKeyA, id, 'CANCELLED');
      expect(email.events.map((e) => e.type)).toEqual(['email.queued', 'email.cancelled']);
      expect((await cancel(id)).statusCode).toBe(200);
      const { rows } = await world.stores.pool.query(
        'SELECT state, attempts FROM outgoing_emails WHERE id = $1',
        [id],
      );
      expect(rows[0]).toEqual({ state: 'cancelled', attempts: 0 });
    });

    it('409 once handed to the provider', async () => {
      const id = await sent(body());
      await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      const res = await cancel(id);
      expect(res.statusCode).toBe(409);
    });

    it('404 for an unknown id or another tenant’s email', async () => {
      expect((await cancel('em_doesnotexist')).statusCode).toBe(404);
      const id = await sent(body({ scheduledAt: new Date(Date.now() + 3600_000).toISOString() }));
      expect((await cancel(id, ownerB)).statusCode).toBe(404);
      expect((await world.app.inject({ url: `/emails/${id}`, headers: bearer(ownerB) })).statusCode).toBe(
        404,
      );
      expect(
        (await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(ownerB) })).statusCode,
      ).toBe(404);
    });

    it('the due-list survives a sender restart and several senders send each email once', async () => {
      for (const s of world.senders.splice(0)) await s.stop();
      const due = new Date(Date.now() + 800).toISOString();
      const ids = [];
      for (let i = 0; i < 6; i++) ids.push(await sent(body({ subject: `due ${i}`, scheduledAt: due })));
      // Nobody runs while they fall due; then three instances start at once.
      await new Promise((r) => setTimeout(r, 1000));
      await Promise.all([world.startSender(), world.startSender(), world.startSender()]);
      for (const id of ids) {
        const email = await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
        expect(
          email.events.filter((e) => e.type === 'email.sent'),
          id,
        ).toHaveLength(1);
      }
      const { rows } = await world.stores.pool.query(
        'SELECT attempts FROM outgoing_emails WHERE tenant_id = $1 AND id = ANY($2::text[])',
        [A, ids],
      );
      expect(rows.map((r) => r.attempts)).toEqual(Array(6).fill(1));
    });
  });

  describe('a sender that dies while the provider holds its message', () => {
    it('the email is taken over after the lease and sent once more at most (same Message-ID); the late answer is dropped', async () => {
      for (const s of world.senders.splice(0)) await s.stop();
      let release: (r: ProviderResult) => void = () => undefined;
      const handed: string[] = [];
      const stuck: MailProvider = {
        name: 'sandbox',
        send: (message) => {
          handed.push(message.messageId);
          return new Promise<ProviderResult>((resolve) => {
            release = resolve;
          });
        },
      };
      const dying = await world.startSender({ provider: stuck, leaseMs: 400 });
      world.senders.splice(world.senders.indexOf(dying), 1);
      const id = await sent(body({ subject: 'stuck' }));
      await waitFor(() => handed.length === 1);
      // Another instance takes the email over once the lease ran out.
      await world.startSender();
      const email = await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      const content = (
        await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKeyA) })
      ).json();
      expect(content.messageId).toBe(handed[0]);
      // The first instance's provider answers at last: nothing more reaches the timeline.
      release({ kind: 'sent', messageId: handed[0]! });
      await dying.stop();
      await new Promise((r) => setTimeout(r, 300));
      const after = await getEmail(world.app, readKeyA, id);
      expect(after!.events.map((e) => e.type)).toEqual(email.events.map((e) => e.type));
      expect(after!.events.filter((e) => e.type === 'email.sent')).toHaveLength(1);
    });
  });

  describe('GET /emails/:id', () => {
    it('200 with the details; 401 without a credential; 403 without email:read', async () => {
      const id = await sent(
        body({ bcc: ['audit@example.com'], replyTo: 'reply@acme.test', projectId: 'prj_1' }),
      );
      const email = await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      expect(email).toMatchObject({ bcc: ['audit@example.com'], projectId: 'prj_1', opens: 0, clicks: 0 });
      expect((await world.app.inject({ url: `/emails/${id}` })).statusCode).toBe(401);
      expect((await world.app.inject({ url: `/emails/${id}`, headers: bearer(sendKeyA) })).statusCode).toBe(
        403,
      );
    });

    it('404 for an email created before the retention cut-off, its content too, before any job deletes it (SPEC §9)', async () => {
      const id = await sent(body());
      await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      const get = (path: string) =>
        world.app.inject({ url: `/emails/${id}${path}`, headers: bearer(readKeyA) });
      expect((await get('/content')).statusCode).toBe(200);
      // Created 200 days ago: past the default retention (90 days); its rows are all still there.
      const old = "now() - interval '200 days'";
      await world.stores.pool.query(
        `UPDATE email_logs SET created_at = ${old} WHERE tenant_id = $1 AND id = $2`,
        [A, id],
      );
      await world.stores.pool.query(
        `UPDATE outgoing_emails SET created_at = ${old} WHERE tenant_id = $1 AND id = $2`,
        [A, id],
      );
      expect((await get('')).statusCode).toBe(404);
      expect((await get('/content')).statusCode).toBe(404);
    });
  });

  describe('a key bound to a project (SPEC §16)', () => {
    let projectOne: string;
    let projectTwo: string;
    let boundKey: string;
    const inOneHour = () => new Date(Date.now() + 3600_000).toISOString();
    const as = (auth: string, url: string, method: 'GET' | 'POST' = 'GET') =>
      world.app.inject({ method, url, headers: bearer(auth) });

    beforeAll(async () => {
      projectOne = await createProject(world.app, ownerA, 'one');
      projectTwo = await createProject(world.app, ownerA, 'two');
      const res = await world.app.inject({
        method: 'POST',
        url: `/tenants/${A}/api-keys`,
        headers: bearer(ownerA),
        payload: { name: 'bound', scopes: ['email:send', 'email:read'], projectId: projectOne },
      });
      expect(res.statusCode, res.body).toBe(201);
      boundKey = res.json().key;
    });

    it('sends into its project; naming another project → 404 and nothing is queued', async () => {
      const implicit = await sent(body(), boundKey);
      const named = await sent(body({ projectId: projectOne }), boundKey);
      for (const id of [implicit, named])
        expect((await getEmail(world.app, ownerA, id))!.projectId).toBe(projectOne);

      const before = await outgoingCount(A);
      const other = await send(body({ projectId: projectTwo }), boundKey);
      expect(other.statusCode, other.body).toBe(404);
      expect(other.json().message).toContain('body.projectId');
      const batch = await world.app.inject({
        method: 'POST',
        url: '/emails/batch',
        headers: bearer(boundKey),
        payload: [body(), body({ projectId: projectTwo })],
      });
      expect(batch.statusCode, batch.body).toBe(404);
      expect(batch.json().message).toContain('body.1.projectId');
      expect(await outgoingCount(A)).toBe(before);
    });

    it('reads, opens the content of and cancels its project’s emails only; any other → 404', async () => {
      const mine = await sent(body(), boundKey);
      await waitForStatus(world.app, boundKey, mine, 'DELIVERED');
      expect((await as(boundKey, `/emails/${mine}/content`)).statusCode).toBe(200);
      const mineLater = await sent(body({ scheduledAt: inOneHour() }), boundKey);
      expect((await as(boundKey, `/emails/${mineLater}/cancel`, 'POST')).statusCode).toBe(200);

      // Another project's email, and one without a project, sent by an unbound key of the tenant.
      const theirs = await sent(body({ projectId: projectTwo, scheduledAt: inOneHour() }));
      const unassigned = await sent(body());
      await waitForStatus(world.app, readKeyA, unassigned, 'DELIVERED');
      for (const id of [theirs, unassigned]) {
        expect((await as(boundKey, `/emails/${id}`)).statusCode).toBe(404);
        expect((await as(boundKey, `/emails/${id}/content`)).statusCode).toBe(404);
        expect((await as(boundKey, `/emails/${id}/cancel`, 'POST')).statusCode).toBe(404);
      }
      // Nothing happened to them.
      expect((await getEmail(world.app, readKeyA, theirs))!.status).toBe('SCHEDULED');
      expect((await as(readKeyA, `/emails/${unassigned}/content`)).statusCode).toBe(200);
    });
  });

  describe('tracking', () => {
    const BROWSER = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko)';
    const path = (url: string) => url.slice(PUBLIC_URL.length);

    async function trackedEmail(): Promise<{ id: string; pixel: string; link: string }> {
      const id = await sent(body());
      await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      const content = (
        await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKeyA) })
      ).json();
      const pixel = /<img src="([^"]+)"/.exec(content.html)![1]!;
      const link = /<a href="([^"]+)">offer/.exec(content.html)![1]!;
      expect(content.html).toContain('href="mailto:x@y.z"');
      return { id, pixel, link };
    }

    it('the pixel answers a GIF and counts an open; a click redirects to the signed URL and counts', async () => {
      const { id, pixel, link } = await trackedEmail();
      expect(pixel.startsWith(`${PUBLIC_URL}/t/o/`)).toBe(true);
      const open = await world.app.inject({ url: path(pixel), headers: { 'user-agent': BROWSER } });
      expect(open.statusCode).toBe(200);
      expect(open.headers['content-type']).toBe('image/gif');
      const click = await world.app.inject({ url: path(link), headers: { 'user-agent': BROWSER } });
      expect(click.statusCode).toBe(302);
      expect(click.headers.location).toBe('https://example.com/offer?a=1&b=2');
      const email = await waitFor(async () => {
        const e = await getEmail(world.app, readKeyA, id);
        return e && e.opens === 1 && e.clicks === 1 ? e : null;
      });
      expect(email.events.find((e) => e.type === 'email.clicked')?.data).toMatchObject({
        url: 'https://example.com/offer?a=1&b=2',
        userAgent: BROWSER,
      });
    });

    it('a forged or altered token → 404, no event, no redirect', async () => {
      const { id, link } = await trackedEmail();
      const token = path(link).slice('/t/c/'.length);
      // v2 (opaque): any altered character; v1 (mail sent before v2): the URL swapped under its MAC.
      const middle = token.length >> 1;
      const altered = `${token.slice(0, middle)}${token[middle] === 'A' ? 'B' : 'A'}${token.slice(middle + 1)}`;
      const legacy = signLegacyTrackingToken(TRACKING_SECRET, {
        kind: 'click',
        tenantId: A,
        emailId: id,
        url: 'https://example.com/offer',
      });
      const [body64, mac] = legacy.split('.') as [string, string];
      const wire = JSON.parse(Buffer.from(body64, 'base64url').toString());
      wire.u = 'https://evil.example/';
      const tampered = `${Buffer.from(JSON.stringify(wire)).toString('base64url')}.${mac}`;
      const forged = signTrackingToken('another-secret-0123456789', {
        kind: 'click',
        tenantId: A,
        emailId: id,
        url: 'https://evil.example/',
      });
      for (const t of [altered, tampered, forged, 'garbage', `${body64}.`, `${token}=`, `${legacy}=`]) {
        const res = await world.app.inject({ url: `/t/c/${t}` });
        expect(res.statusCode, t).toBe(404);
        expect(res.headers.location).toBeUndefined();
      }
      // An open token is not a click token.
      const open = signTrackingToken(TRACKING_SECRET, { kind: 'open', tenantId: A, emailId: id });
      expect((await world.app.inject({ url: `/t/c/${open}` })).statusCode).toBe(404);
      await new Promise((r) => setTimeout(r, 300));
      const email = await getEmail(world.app, readKeyA, id);
      expect(email!.events.filter((e) => e.type === 'email.clicked')).toHaveLength(0);
    });

    it('opens as people count them (SPEC §21): Gmail’s proxy is a reader; Apple MPP and scanners are machine opens, kept apart', async () => {
      const { id, pixel } = await trackedEmail();
      const fetchPixel = async (userAgent: string, ip = '198.51.100.7') => {
        const res = await world.app.inject({
          url: path(pixel),
          headers: { 'user-agent': userAgent },
          remoteAddress: ip,
        });
        expect(res.statusCode).toBe(200);
      };
      // Gmail fetches through its proxy when the reader opens the message: a person.
      await fetchPixel(
        'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)',
      );
      // Apple Mail Privacy Protection prefetches with a bare user agent, from Apple's addresses.
      await fetchPixel('Mozilla/5.0');
      await fetchPixel('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15', '17.58.1.4');
      // A security scanner.
      await fetchPixel('Mozilla/5.0 (compatible; Barracuda Sentinel)');
      const email = await waitFor(async () => {
        const e = await getEmail(world.app, readKeyA, id);
        return (e?.events.filter((x) => x.type === 'email.opened').length ?? 0) === 4 ? e : null;
      });
      const opens = email.events.filter((e) => e.type === 'email.opened');
      expect(opens.filter((o) => o.data.machine === true)).toHaveLength(3);
      expect(
        opens.find((o) => String(o.data.userAgent).includes('GoogleImageProxy'))?.data.machine,
      ).toBeUndefined();
      expect(email.opens).toBe(1);
    });

    it('follows the tenant setting: GET/PUT /tenants/:id/settings tracking', async () => {
      const settings = (
        await world.app.inject({ url: `/tenants/${A}/settings`, headers: bearer(ownerA) })
      ).json();
      expect(settings).toMatchObject({ retentionDays: null, tracking: { opens: true, clicks: true } });
      const put = await world.app.inject({
        method: 'PUT',
        url: `/tenants/${A}/settings`,
        headers: bearer(ownerA),
        payload: { tracking: { opens: false, clicks: false } },
      });
      expect(put.statusCode, put.body).toBe(200);
      expect(put.json()).toEqual({
        retentionDays: null,
        defaultRetentionDays: 90,
        tracking: { opens: false, clicks: false },
        sendRatePerSecond: null,
        defaultSendRatePerSecond: 0,
        timeZone: null,
      });
      const bad = await world.app.inject({
        method: 'PUT',
        url: `/tenants/${A}/settings`,
        headers: bearer(ownerA),
        payload: { tracking: { opens: 'yes', clicks: true } },
      });
      expect(bad.statusCode).toBe(400);
      // The sender keeps a tenant's settings for at most 1 s: mail handed over after that follows the change.
      await new Promise((r) => setTimeout(r, 1100));
      const id = await sent(body());
      await waitForStatus(world.app, readKeyA, id, 'DELIVERED');
      const content = (
        await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKeyA) })
      ).json();
      expect(content.html).not.toContain('/t/o/');
      expect(content.html).toContain('href="https://example.com/offer?a=1&amp;b=2"');
      await world.app.inject({
        method: 'PUT',
        url: `/tenants/${A}/settings`,
        headers: bearer(ownerA),
        payload: { tracking: { opens: true, clicks: true } },
      });
      // The tests after this one send with tracking on again.
      await new Promise((r) => setTimeout(r, 1100));
    });
  });
});

describe("the Idempotency-Key's scope", () => {
  /**
   * Issue 24, item 6: the same Idempotency-Key and body from keys bound to two projects made the
   * second request replay the first's answer (202 with the first's id, nothing sent), and that id
   * was 404 for the second key. The key is scoped by (tenant, project) and the body is hashed after
   * the project is applied.
   */
  const A = `idem-scope-${suffix()}`;
  let world: SendingWorld;
  let owner: string;
  let keyP1: string;
  let keyP2: string;
  let keyTenant: string;
  let p1: string;

  const BODY = { from: 'Acme <hello@acme.test>', to: 'ada@example.com', subject: 'Same', text: 'Same body' };

  async function createKey(body: Record<string, unknown>): Promise<string> {
    const res = await world.app.inject({
      method: 'POST',
      url: `/tenants/${A}/api-keys`,
      headers: bearer(owner),
      payload: { name: 'k', scopes: ['email:send', 'email:read'], ...body },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().key as string;
  }

  const project = (name: string) => createProject(world.app, owner, name);

  const send = (key: string, idem: string, payload: unknown = BODY, url = '/emails/send') =>
    world.app.inject({
      method: 'POST',
      url,
      headers: { ...bearer(key), 'idempotency-key': idem },
      payload: payload as object,
    });

  beforeAll(async () => {
    world = await openSendingWorld({ sender: false });
    owner = jwtFor(wallClock, A, 'owner');
    p1 = await project('p1');
    const p2 = await project('p2');
    keyP1 = await createKey({ projectId: p1 });
    keyP2 = await createKey({ projectId: p2 });
    keyTenant = await createKey({});
  }, 120_000);

  afterAll(async () => {
    await world?.close();
  });

  describe('Idempotency-Key per (tenant, project)', () => {
    it('the same key and body from two projects are two sends, each readable by its own key', async () => {
      const idem = `k-${suffix()}`;
      const first = await send(keyP1, idem);
      const second = await send(keyP2, idem);
      expect(first.statusCode, first.body).toBe(202);
      expect(second.statusCode, second.body).toBe(202);
      const id1 = first.json().id as string;
      const id2 = second.json().id as string;
      expect(id2).not.toBe(id1);
      const read = (key: string, id: string) =>
        world.app.inject({ url: `/emails/${id}`, headers: bearer(key) }).then((r) => r.statusCode);
      expect(await read(keyP1, id1)).toBe(200);
      expect(await read(keyP2, id2)).toBe(200);
      // Each project replays its own answer.
      expect((await send(keyP1, idem)).json().id).toBe(id1);
      expect((await send(keyP2, idem)).json().id).toBe(id2);
    });

    it('the batch route too', async () => {
      const idem = `b-${suffix()}`;
      const first = await send(keyP1, idem, [BODY], '/emails/batch');
      const second = await send(keyP2, idem, [BODY], '/emails/batch');
      expect(first.statusCode, first.body).toBe(202);
      expect(second.statusCode, second.body).toBe(202);
      expect(second.json().data[0].id).not.toBe(first.json().data[0].id);
    });

    it('hashes the body with its project applied: naming the bound project or leaving it out is one request', async () => {
      const idem = `h-${suffix()}`;
      const first = await send(keyP1, idem);
      const named = await send(keyP1, idem, { ...BODY, projectId: p1 });
      expect(named.statusCode, named.body).toBe(202);
      expect(named.json().id).toBe(first.json().id);
    });

    it('within one scope the key still refuses another body (409) and a tenant-wide key has its own scope', async () => {
      const idem = `c-${suffix()}`;
      expect((await send(keyTenant, idem)).statusCode).toBe(202);
      const other = await send(keyTenant, idem, { ...BODY, subject: 'Other' });
      expect(other.statusCode).toBe(409);
      expect(other.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
      const bound = await send(keyP1, idem);
      expect(bound.statusCode, bound.body).toBe(202);
    });
  });
});

// Issue 40 item 9: an owner set `sendRatePerSecond` to 1 000 000 with a production default of 100.
// The operator's ceiling (SEND_RATE_MAX_PER_SECOND, default the server's rate) bounds what a
// tenant may set, over a real socket, and the sender's view of a rate stored before the ceiling.
describe("the operator's send-rate ceiling", () => {
  let stores: Stores;
  let app: FastifyInstance;
  let base: string;
  const run = suffix();

  beforeAll(async () => {
    ({ stores, app } = await openApp(wallClock, {
      limits: { rateLimit: false, sendRatePerSecond: 100, sendRateMaxPerSecond: 100 },
    }));
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  }, 60_000);

  afterAll(() => closeAll(app, stores));

  const put = async (tenant: string, body: unknown) => {
    const res = await fetch(`${base}/tenants/${tenant}/settings`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${jwtFor(wallClock, tenant)}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  describe('the operator’s ceiling on sendRatePerSecond', () => {
    it('above the ceiling → 400 naming it, nothing changed; at or below → 200; null → the server default', async () => {
      const tenant = `rate-cap-${run}`;
      const high = await put(tenant, { sendRatePerSecond: 1_000_000, retentionDays: 5 });
      expect(high.status).toBe(400);
      expect(high.body.code).toBe('FST_ERR_VALIDATION');
      expect(String(high.body.message)).toMatch(/at most 100/);
      const { rows } = await stores.pool.query('SELECT 1 FROM tenant_settings WHERE tenant_id = $1', [
        tenant,
      ]);
      expect(rows).toHaveLength(0);
      expect((await put(tenant, { sendRatePerSecond: 101 })).status).toBe(400);
      expect((await put(tenant, { sendRatePerSecond: 100 })).body).toMatchObject({ sendRatePerSecond: 100 });
      expect((await put(tenant, { sendRatePerSecond: 7 })).body).toMatchObject({ sendRatePerSecond: 7 });
      expect((await put(tenant, { sendRatePerSecond: null })).body).toMatchObject({
        sendRatePerSecond: null,
        defaultSendRatePerSecond: 100,
      });
    });

    it('the sender applies a rate stored above the ceiling (before it existed) at the ceiling', async () => {
      const tenant = `rate-old-${run}`;
      await stores.pool.query(
        `INSERT INTO tenant_settings (tenant_id, send_rate_per_second, updated_at) VALUES ($1, 1000000, now())`,
        [tenant],
      );
      const capped = createTenantSettingsCache({ pool: stores.pool, defaultRate: 100, maxRate: 100 });
      expect((await capped.of([tenant])).get(tenant)?.rate).toBe(100);
      // No ceiling named (0): unlimited development default, the stored rate as it is.
      const open = createTenantSettingsCache({ pool: stores.pool, defaultRate: 0, maxRate: 0 });
      expect((await open.of([tenant])).get(tenant)?.rate).toBe(1_000_000);
      // An unlimited default under a ceiling is the ceiling.
      const unlimited = createTenantSettingsCache({ pool: stores.pool, defaultRate: 0, maxRate: 50 });
      expect((await unlimited.of([`rate-none-${run}`])).get(`rate-none-${run}`)?.rate).toBe(50);
    });
  });
});
