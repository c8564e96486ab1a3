import type { DeliveryEvent } from '@tern/contracts';
import { createUnsubscribeToken } from '@tern/domain';
import { createKeyring } from '@tern/privacy';
import { suppressionCheck, suppressionCheckMany } from '@tern/read-models';
import { emailDetail } from '@tern/sending';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import { openSendingWorld, type SendingWorld, waitForStatus, wallClock } from '../sending-support.js';
import {
  buildApp,
  createKey,
  ENCRYPTION_KEY,
  eventsOf,
  jwtFor,
  NOW,
  project,
  suffix,
  TRACKING_SECRET,
  testApp,
} from '../support.js';

describe('erasure', () => {
  const file = testApp('erase');
  const { clock, run, A, B } = file;
  const ADA = 'ada.erase@example.com';

  let ownerA: string;
  let writeKeyA: string;
  let readKeyA: string;

  const erase = (payload: unknown, headers: Record<string, string> = { 'x-api-key': writeKeyA }) =>
    file.app.inject({ method: 'POST', url: '/contacts/erase', headers, payload: payload as object });

  beforeAll(async () => {
    ownerA = jwtFor(clock, A, 'owner');
    writeKeyA = (await createKey(file.app, ownerA, A, { scopes: ['contacts:write'] })).key;
    readKeyA = (await createKey(file.app, ownerA, A, { scopes: ['contacts:read'] })).key;
  });

  describe('POST /contacts/erase', () => {
    it('400 naming the field for a bad address or an unknown field; 401 without credential; 403 without contacts:write', async () => {
      const bad = await erase({ email: 'not-an-address' });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().message).toContain('body.email');
      const extra = await erase({ email: ADA, also: 1 });
      expect(extra.statusCode).toBe(400);
      expect(extra.json().message).toContain('also');
      expect((await erase({ email: ADA }, {})).statusCode).toBe(401);
      expect((await erase({ email: ADA }, { 'x-api-key': readKeyA })).statusCode).toBe(403);
    });

    it('202 with counts, scrubbing only this tenant’s rows; 200 with zero counts on a repeat; the hash suppresses', async () => {
      for (const tenant of [A, B]) {
        const owner = jwtFor(clock, tenant, 'owner');
        const created = await file.app.inject({
          method: 'POST',
          url: '/contacts',
          headers: { authorization: `Bearer ${owner}` },
          payload: { email: ADA, firstName: 'Ada', audiences: ['vip'] },
        });
        expect(created.statusCode).toBe(201);
        await project(
          file.stores,
          eventsOf(tenant, `em_erase_${tenant}`, [
            {
              type: 'email.queued',
              occurredAt: NOW,
              data: { toEmail: 'Ada.Erase@Example.com', subject: 'For Ada' },
            },
            { type: 'email.delivered', occurredAt: NOW },
          ]),
        );
        await file.stores.pool.query(
          `INSERT INTO suppressions (tenant_id, email, reason, source) VALUES ($1, $2, 'complaint', 'complaint')`,
          [tenant, ADA],
        );
      }
      const logsBefore = await file.stores.pool.query(
        'SELECT * FROM email_log_counts WHERE tenant_id = $1 ORDER BY day, status, project_id',
        [A],
      );

      const res = await erase({ email: ' ADA.Erase@example.com ' });
      expect(res.statusCode).toBe(202);
      expect(res.json()).toEqual({
        erased: true,
        counts: {
          dataKeys: 0, // the events were projected directly, not sealed through the log
          contacts: 1,
          emails: 1,
          sandboxMessages: 0,
          webhookDeliveries: 0,
          suppressions: 1,
          unsubscribes: 0,
        },
      });

      const { rows: logA } = await file.stores.pool.query(
        'SELECT to_email, subject, state::text AS state FROM email_logs WHERE tenant_id = $1',
        [A],
      );
      expect(logA).toHaveLength(1);
      expect(logA[0]).toMatchObject({ to_email: null, subject: null });
      // The stored fold state keeps no copy of the columns (`storedState`), nor any other.
      expect(logA[0].state.toLowerCase()).not.toContain(ADA);
      expect(logA[0].state).not.toContain('For Ada');
      const { rows: timeline } = await file.stores.pool.query(
        "SELECT data FROM email_events WHERE tenant_id = $1 AND type = 'email.queued'",
        [A],
      );
      expect(timeline[0].data).toMatchObject({ toEmail: null, subject: null });
      // Counters hold no personal data and do not move.
      expect(
        (
          await file.stores.pool.query(
            'SELECT * FROM email_log_counts WHERE tenant_id = $1 ORDER BY day, status, project_id',
            [A],
          )
        ).rows,
      ).toEqual(logsBefore.rows);
      // The log entry stays listed, with null recipient and subject.
      const logs = await file.app.inject({
        method: 'GET',
        url: '/emails/logs',
        headers: { authorization: `Bearer ${ownerA}` },
      });
      expect(logs.json().data).toEqual([
        expect.objectContaining({ toEmail: null, subject: null, status: 'DELIVERED' }),
      ]);

      // Tenant B keeps everything.
      const { rows: logB } = await file.stores.pool.query(
        'SELECT to_email FROM email_logs WHERE tenant_id = $1',
        [B],
      );
      expect(logB[0].to_email).toBe('Ada.Erase@Example.com');
      expect(
        (await file.stores.pool.query('SELECT 1 FROM contacts WHERE tenant_id = $1', [B])).rowCount,
      ).toBe(1);

      // Kept as a keyed hash only: no clear address anywhere for tenant A, and a send is suppressed.
      const keyring = createKeyring({ pool: file.stores.pool, encryptionKey: ENCRYPTION_KEY });
      const { rows: erased } = await file.stores.pool.query(
        'SELECT recipient_hash FROM erased_recipients WHERE tenant_id = $1',
        [A],
      );
      expect(erased).toEqual([{ recipient_hash: keyring.recipientHash(A, ADA) }]);
      const check = suppressionCheck(keyring);
      expect(await check(file.stores.pool, A, 'Ada.ERASE@example.com')).toBe(true);
      expect(await check(file.stores.pool, A, 'someone.else@example.com')).toBe(false);
      // The sender's form for a claim round: one query, the answers in the order asked.
      expect(
        await suppressionCheckMany(keyring)(file.stores.pool, [
          { tenantId: A, email: 'someone.else@example.com' },
          { tenantId: A, email: 'Ada.ERASE@example.com' },
          { tenantId: `erase-none-${run}`, email: 'Ada.ERASE@example.com' },
        ]),
      ).toEqual([false, true, false]);
      expect(
        (await file.stores.pool.query('SELECT 1 FROM suppressions WHERE tenant_id = $1', [A])).rowCount,
      ).toBe(0);

      const again = await erase({ email: ADA });
      expect(again.statusCode).toBe(200);
      expect(Object.values(again.json().counts)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    });

    it('scrubs again after the rescrub delay: what a process with the key still cached wrote meanwhile is removed', async () => {
      const quick = await buildApp(file.stores, clock, { policy: { erasureRescrubMs: 300 } });
      try {
        const T = `erase-r-${run}`;
        const owner = jwtFor(clock, T, 'owner');
        await project(
          file.stores,
          eventsOf(T, `em_rescrub_${T}`, [
            { type: 'email.queued', occurredAt: NOW, data: { toEmail: 'late@example.com', subject: 'Late' } },
          ]),
        );
        const res = await quick.inject({
          method: 'POST',
          url: '/contacts/erase',
          headers: { authorization: `Bearer ${owner}` },
          payload: { email: 'late@example.com' },
        });
        expect(res.statusCode).toBe(202);
        // A projector elsewhere, its key cache not yet expired, folds an in-flight event with the
        // opened address after the erasure committed:
        await file.stores.pool.query(
          `UPDATE email_logs SET to_email = 'late@example.com', subject = 'Late',
                state = jsonb_set(state, '{queued,toEmail}', '"late@example.com"')
          WHERE tenant_id = $1`,
          [T],
        );
        await waitFor(
          async () => {
            const { rows } = await file.stores.pool.query(
              'SELECT to_email, state::text AS state FROM email_logs WHERE tenant_id = $1',
              [T],
            );
            return rows[0].to_email === null && !rows[0].state.includes('late@example.com');
          },
          { timeoutMs: 5000, description: 'the second scrub' },
        );
      } finally {
        await quick.close();
      }
    });

    it('reaches every copy: other mail’s cc/bcc/replyTo, every event’s personal fields, webhook answers; a stale unsubscribe link writes no address (issue 24)', async () => {
      const T = `erase-c-${run}`;
      const owner = jwtFor(clock, T, 'owner');
      const EVE = 'eve.copied@example.com';
      const own = `em_own_${run}`;
      const other = `em_other_${run}`;
      await project(
        file.stores,
        eventsOf(T, own, [
          { type: 'email.queued', occurredAt: NOW, data: { toEmail: EVE, subject: 'For Eve' } },
          {
            type: 'email.bounced',
            occurredAt: NOW,
            data: { bounceType: 'soft', reason: `552 <${EVE}> full` },
          },
          {
            type: 'email.clicked',
            occurredAt: NOW,
            data: { url: `https://a.test/?e=${EVE}`, userAgent: 'EveUA' },
          },
        ]),
      );
      await project(
        file.stores,
        eventsOf(T, other, [
          { type: 'email.queued', occurredAt: NOW, data: { toEmail: 'bo@example.com', subject: 'B' } },
        ]),
      );
      const message = (to: string) => ({
        from: 'a@acme.test',
        to,
        cc: [EVE.toUpperCase(), 'kim@example.com'],
        bcc: [EVE],
        replyTo: EVE,
        subject: 'B',
        text: 't',
      });
      await file.stores.pool.query(
        `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, last_error)
       VALUES ($1, $2, 'done', now(), $3, $4), ($1, $5, 'done', now(), $6, NULL)`,
        [T, own, message(EVE), `550 <${EVE}> unknown`, other, message('bo@example.com')],
      );
      await file.stores.pool.query(
        `INSERT INTO sandbox_messages (tenant_id, email_id, message) VALUES ($1, $2, $3)`,
        [T, other, { ...message('bo@example.com'), messageId: '<m@x>', html: null, headers: {} }],
      );
      const { rows: delivery } = await file.stores.pool.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, request_body,
         recipient, status, attempts, next_attempt_at, created_at, updated_at)
       VALUES ($1, 'wh_1', 'ev_b', 'email.bounced', $2, $3, $4, $5, 'delivered', 1, now(), now(), now()) RETURNING id`,
        [
          T,
          own,
          { type: 'email.bounced', data: { bounceType: 'soft', reason: `552 <${EVE}> full` } },
          `{"reason":"552 <${EVE}> full"}`,
          EVE,
        ],
      );
      await file.stores.pool.query(
        `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, response_excerpt)
       VALUES ($1, 1, now(), 5, 200, $2)`,
        [delivery[0]!.id, `ok, got ${EVE}`],
      );
      const tenantText = async () => {
        const parts: string[] = [];
        for (const [table, where] of [
          ['email_events', 'tenant_id = $1'],
          ['outgoing_emails', 'tenant_id = $1'],
          ['sandbox_messages', 'tenant_id = $1'],
          ['webhook_deliveries', 'tenant_id = $1'],
          ['webhook_attempts', 'delivery_id IN (SELECT id FROM webhook_deliveries WHERE tenant_id = $1)'],
          ['suppressions', 'tenant_id = $1'],
        ]) {
          const { rows } = await file.stores.pool.query<{ t: string }>(
            `SELECT x::text AS t FROM ${table} x WHERE ${where}`,
            [T],
          );
          parts.push(...rows.map((r) => r.t));
        }
        return parts.join('\n').toLowerCase();
      };
      expect(await tenantText()).toContain(EVE);

      const res = await file.app.inject({
        method: 'POST',
        url: '/contacts/erase',
        headers: { authorization: `Bearer ${owner}` },
        payload: { email: EVE },
      });
      expect(res.statusCode).toBe(202);
      // An old unsubscribe link of the erased address, used afterwards.
      const token = createUnsubscribeToken(TRACKING_SECRET, {
        tenantId: T,
        email: EVE,
        source: 'campaign:cmp_1',
      });
      expect((await file.app.inject({ method: 'POST', url: `/u/${token}` })).statusCode).toBe(200);

      const text = await tenantText();
      expect(text).not.toContain(EVE);
      expect(text).not.toContain('eveua');
      // The other mail keeps its other recipients; the timeline keeps the events, not their personal fields.
      const { rows: kept } = await file.stores.pool.query(
        'SELECT message FROM outgoing_emails WHERE id = $1',
        [other],
      );
      expect(kept[0].message).toMatchObject({
        to: 'bo@example.com',
        cc: ['kim@example.com'],
        bcc: [],
        replyTo: null,
      });
      const { rows: events } = await file.stores.pool.query(
        'SELECT type, data FROM email_events WHERE email_id = $1 ORDER BY type',
        [own],
      );
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ['email.bounced', { bounceType: 'soft' }],
        ['email.clicked', { url: '[erased]' }],
        ['email.queued', { toEmail: null, subject: null }],
      ]);
      expect(
        (await file.stores.pool.query('SELECT 1 FROM erased_recipients WHERE tenant_id = $1', [T])).rowCount,
      ).toBe(1);
    });

    it('several recipients: erasure is per address; the others keep their mail, their outcomes and their place (SPEC §22)', async () => {
      const T = `erase-m-${run}`;
      const owner = jwtFor(clock, T, 'owner');
      const [FIRST, SECOND, COPY] = ['first.m@example.com', 'second.m@example.com', 'copy.m@example.com'];
      const id = `em_multi_${run}`;
      const at = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();
      await project(
        file.stores,
        eventsOf(T, id, [
          { type: 'email.queued', occurredAt: NOW, data: { toEmail: FIRST, subject: 'For all' } },
          { type: 'email.sent', occurredAt: at(1), data: { provider: 'smtp', messageId: '<m@x>' } },
          { type: 'email.delivered', occurredAt: at(2), data: { recipient: FIRST } },
          {
            type: 'email.bounced',
            occurredAt: at(3),
            data: { bounceType: 'hard', reason: `550 <${SECOND}> unknown`, recipient: SECOND },
          },
          { type: 'email.delivered', occurredAt: at(4), data: { recipient: COPY } },
        ]),
      );
      await file.stores.pool.query(
        `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message) VALUES ($1, $2, 'done', now(), $3)`,
        [T, id, { from: 'a@acme.test', to: [FIRST, SECOND], cc: [COPY], subject: 'For all', text: 't' }],
      );
      // What GET /emails/:id answers (this app mounts no sending routes).
      const detail = async () => {
        const d = await emailDetail(file.stores.pool, T, id, new Date(0));
        return JSON.parse(JSON.stringify(d));
      };
      expect(await detail()).toMatchObject({
        toEmail: FIRST,
        status: 'BOUNCED',
        to: [FIRST, SECOND],
        recipients: [
          { email: FIRST, type: 'to', status: 'DELIVERED' },
          { email: SECOND, type: 'to', status: 'BOUNCED' },
          { email: COPY, type: 'cc', status: 'DELIVERED' },
        ],
      });
      const eraseIn = (email: string) =>
        file.app.inject({
          method: 'POST',
          url: '/contacts/erase',
          headers: { authorization: `Bearer ${owner}` },
          payload: { email },
        });

      // A recipient that is not the first: its address and its own outcome's fields go; the rest stays.
      expect((await eraseIn(SECOND)).statusCode).toBe(202);
      const afterSecond = await detail();
      expect(afterSecond).toMatchObject({
        toEmail: FIRST,
        subject: 'For all',
        to: [FIRST],
        recipients: [
          { email: FIRST, type: 'to', status: 'DELIVERED' },
          { email: COPY, type: 'cc', status: 'DELIVERED' },
        ],
      });
      expect(JSON.stringify(afterSecond)).not.toContain(SECOND);
      expect(afterSecond.events.map((e: { data: unknown }) => e.data)).toContainEqual({
        bounceType: 'hard',
        recipient: '[erased]',
      });

      // The first `to`: the log entry's recipient and subject go (they were sealed under its key);
      // the message stays the copy's, with its own outcome.
      expect((await eraseIn(FIRST)).statusCode).toBe(202);
      const afterFirst = await detail();
      expect(afterFirst).toMatchObject({
        toEmail: null,
        subject: null,
        to: [],
        recipients: [{ email: COPY, type: 'cc', status: 'DELIVERED' }],
      });
      expect(JSON.stringify(afterFirst)).not.toContain(FIRST);
      const { rows } = await file.stores.pool.query(
        'SELECT message FROM outgoing_emails WHERE tenant_id = $1',
        [T],
      );
      expect(rows[0].message).toMatchObject({ to: [], cc: [COPY], text: 't' });

      // The last one left: the content goes with it.
      expect((await eraseIn(COPY)).statusCode).toBe(202);
      const { rows: gone } = await file.stores.pool.query(
        'SELECT message FROM outgoing_emails WHERE tenant_id = $1',
        [T],
      );
      expect(gone[0].message).toEqual({ erased: true, from: 'a@acme.test' });
      expect((await detail()).recipients).toEqual([]);
    });
  });
});

// Issue 40 item 10: erasing a recipient scrubs every place that names it — a cc's address quoted in
// a whole-message provider diagnostic (Postmark), the stored webhook request body and the
// receiver's echoed answer, a Bcc's address inside an attachment's file name (send content and
// sandbox copy). The real app over a socket, the sender with the sandbox, the projector, Postgres.
describe('erasure scrubs every mention', () => {
  let world: SendingWorld;
  let base: string;
  let key: string;
  const run = suffix();
  const T = `erase-m-${run}`;
  const TO = 'ann.m@example.com';
  const CC = 'Cc.Person@example.com';
  const BCC = 'bcc.person@example.com';

  beforeAll(async () => {
    world = await openSendingWorld();
    base = await world.app.listen({ port: 0, host: '127.0.0.1' });
    key = (
      await createKey(world.app, jwtFor(wallClock, T), T, {
        scopes: ['email:send', 'email:read', 'contacts:write'],
      })
    ).key;
  }, 120_000);

  afterAll(async () => {
    await world?.close();
  });

  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  /** Rows of the tenant, in each table that could hold content, whose text names `address`. */
  async function mentions(address: string): Promise<Record<string, number>> {
    // The address as a whole (not `cc.person@…` inside `bcc.person@…`), in lowercased text.
    const a = `(?<![a-z0-9])${address.toLowerCase().replaceAll('.', '\\.')}(?![a-z0-9-])`;
    const q = async (sql: string) => Number((await world.stores.pool.query(sql, [T, a])).rows[0].n);
    return {
      outgoing: await q(
        'SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1 AND lower(message::text) ~ $2',
      ),
      sandbox: await q(
        'SELECT count(*) AS n FROM sandbox_messages WHERE tenant_id = $1 AND lower(message::text) ~ $2',
      ),
      timeline: await q(
        'SELECT count(*) AS n FROM email_events WHERE tenant_id = $1 AND lower(data::text) ~ $2',
      ),
      deliveries: await q(
        `SELECT count(*) AS n FROM webhook_deliveries WHERE tenant_id = $1
          AND (lower(event::text) ~ $2 OR lower(coalesce(request_body, '')) ~ $2)`,
      ),
      answers: await q(
        `SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.tenant_id = $1 AND lower(coalesce(a.response_excerpt, '')) ~ $2`,
      ),
    };
  }
  const none = { outgoing: 0, sandbox: 0, timeline: 0, deliveries: 0, answers: 0 };

  describe('erasure scrubs every copy naming the address (issue 40 item 10)', () => {
    it('a cc quoted in a whole-message diagnostic and a webhook body and answer; a Bcc in a file name', async () => {
      const sent = await call('/emails/send', {
        from: 'Acme <hello@acme.test>',
        to: TO,
        cc: [CC],
        bcc: [BCC],
        subject: 'Quarterly report',
        text: 'See attached',
        attachments: [
          { filename: `report-for-${BCC}.txt`, content: Buffer.from('numbers').toString('base64') },
        ],
      });
      expect(sent.status).toBe(202);
      const emailId = String(sent.body.id);
      await waitForStatus(world.app, key, emailId, 'DELIVERED', ['email.delivered']);
      await waitFor(
        async () =>
          (
            await world.stores.pool.query(
              'SELECT 1 FROM sandbox_messages WHERE tenant_id = $1 AND email_id = $2',
              [T, emailId],
            )
          ).rowCount === 1,
      );
      // Postmark's bounce of the whole message (no recipient), its Details quoting the cc.
      const diagnostic = `smtp;552 5.2.2 mailbox ${CC.toLowerCase()} is full`;
      const bounce = {
        id: `postmark:whole-${run}`,
        type: 'email.bounced',
        tenantId: T,
        emailId,
        occurredAt: new Date().toISOString(),
        data: { bounceType: 'soft', reason: 'SoftBounce', smtpStatus: '5.2.2', diagnostic },
      } as DeliveryEvent;
      await project(world.stores, [bounce]);
      // The dispatcher's record of that event sent to the tenant's endpoint, and the endpoint's echo.
      const { rows } = await world.stores.pool.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, request_body,
                                       recipient, status, next_attempt_at, created_at, updated_at)
       VALUES ($1, 'wh_m', $2, 'email.bounced', $3, $4, $5, NULL, 'delivered', now(), now(), now()) RETURNING id`,
        [
          T,
          bounce.id,
          emailId,
          JSON.stringify(bounce),
          JSON.stringify({ type: 'email.bounced', data: bounce.data }),
        ],
      );
      await world.stores.pool.query(
        `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, response_excerpt)
       VALUES ($1, 1, now(), 3, 200, $2)`,
        [rows[0]!.id, `{"ok":true,"echo":${JSON.stringify(diagnostic)}}`],
      );
      const before = await mentions(CC);
      expect(before).toMatchObject({ deliveries: 1, answers: 1 });
      // The queued and sent events name it as a cc, the bounce in its diagnostic.
      expect(before.timeline).toBeGreaterThanOrEqual(2);
      expect((await mentions(BCC)).outgoing).toBe(1);
      expect((await mentions(BCC)).sandbox).toBe(1);

      expect((await call('/contacts/erase', { email: CC })).status).toBe(202);
      expect(await mentions(CC)).toEqual(none);
      expect((await call('/contacts/erase', { email: BCC })).status).toBe(202);
      expect(await mentions(BCC)).toEqual(none);
      // The to's mail stays the to's: its content, sandbox copy and attachment name (scrubbed) remain.
      const { rows: kept } = await world.stores.pool.query<{
        message: { to: unknown; attachments: { filename: string }[] };
      }>('SELECT message FROM outgoing_emails WHERE tenant_id = $1 AND id = $2', [T, emailId]);
      expect(kept[0]?.message.to).toBe(TO);
      expect(kept[0]?.message.attachments[0]?.filename).toBe('report-for-[erased].txt');
    });
  });
});
