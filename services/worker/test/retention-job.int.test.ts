import {
  createDmarcConsumer,
  type DnsResolve,
  dmarcSummary,
  type ReceivedMessage,
  receiveMessage,
} from '@tern/inbound';
import { idTime } from '@tern/kernel';
import { createKeyring, type Sealed } from '@tern/privacy';
import { ensureLogDays, logDay, logDays } from '@tern/read-models';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gzip, reportXml } from '../../../packages/inbound/test/dmarc-report.js';
import { waitFor } from '../../../test/support/services.js';
import { eventsFor, type GeneratedEmail, generateEmails } from '../../api/test/datasets.js';
import { createRetentionJob, RETENTION_LOCK_KEY } from '../src/index.js';
import {
  bearer,
  createClock,
  DEFAULT_RETENTION_DAYS,
  dayStart,
  ENCRYPTION_KEY,
  eventsOf,
  isoDay,
  jwtFor,
  NOW,
  openApp,
  project,
  type Stores,
  suffix,
} from './support.js';

const clock = createClock(NOW);
const run = suffix();
/** Default retention (90 days). */
const D = `ret-default-${run}`;
/** Override shorter than the default. */
const S = `ret-short-${run}`;
/** Override longer than the default. */
const L = `ret-long-${run}`;
const RETENTION: Record<string, number> = { [D]: DEFAULT_RETENTION_DAYS, [S]: 10, [L]: 200 };

let stores: Stores;
let app: FastifyInstance;
const emails: Record<string, GeneratedEmail[]> = {};

const cutoffOf = (tenant: string) => dayStart(NOW, -RETENTION[tenant]!);

async function pgIds(tenant: string): Promise<string[]> {
  const { rows } = await stores.pool.query<{ id: string }>(
    'SELECT id FROM email_logs WHERE tenant_id = $1 AND created_at IS NOT NULL ORDER BY id',
    [tenant],
  );
  return rows.map((r) => r.id);
}

async function chDays(tenant: string): Promise<Record<string, number>[]> {
  const result = await stores.ch.query({
    query: `SELECT toString(day) AS d, sum(total) AS t, sum(sent) AS s, sum(opened) AS o
              FROM email_daily_v2 WHERE tenant_id = {tenant:String}
             GROUP BY day HAVING t != 0 ORDER BY day`,
    query_params: { tenant },
    format: 'JSONEachRow',
  });
  const rows = (await result.json()) as Record<string, string | number>[];
  return rows.map((r) => ({
    day: Number(String(r.d).replaceAll('-', '')),
    t: Number(r.t),
    s: Number(r.s),
    o: Number(r.o),
  }));
}

/** Everything the API shows a tenant: logs (all pages) and 90-day analytics. */
async function apiView(tenant: string) {
  const headers = bearer(jwtFor(clock, tenant));
  const out: unknown[] = [];
  for (let page = 1; ; page++) {
    const body = (await app.inject({ url: `/emails/logs?limit=100&page=${page}`, headers })).json();
    out.push(body.data);
    if (page >= body.meta.totalPages) break;
  }
  for (const route of ['summary', 'daily', 'top-templates']) {
    out.push((await app.inject({ url: `/analytics/${route}?days=90`, headers })).json());
  }
  return out;
}

/** The rows of one email in every table that holds its content. */
async function rowsOf(tenant: string, id: string): Promise<Record<string, number>> {
  const { rows } = await stores.pool.query<Record<string, number>>(
    `SELECT (SELECT count(*) FROM email_logs WHERE tenant_id = $1 AND id = $2)::int AS logs,
            (SELECT count(*) FROM email_events WHERE tenant_id = $1 AND email_id = $2)::int AS events,
            (SELECT count(*) FROM outgoing_emails WHERE tenant_id = $1 AND id = $2)::int AS sends,
            (SELECT count(*) FROM sandbox_messages WHERE tenant_id = $1 AND email_id = $2)::int AS sandbox,
            (SELECT count(*) FROM webhook_deliveries WHERE tenant_id = $1 AND email_id = $2)::int AS deliveries,
            (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
              WHERE d.tenant_id = $1 AND d.email_id = $2)::int AS attempts`,
    [tenant, id],
  );
  return rows[0]!;
}

const minutesAfter = (iso: string, minutes: number) =>
  new Date(Date.parse(iso) + minutes * 60_000).toISOString();

/**
 * An email sent through Tern as the services leave it: its timeline (queued, sent, delivered, an
 * open, `lateOpenAt` when given), its send row, the sandbox's copy and a delivered webhook (with
 * its attempt); `pending` leaves it a scheduled send the sender has not handed over yet.
 */
async function sentEmail(
  tenant: string,
  id: string,
  createdAt: string,
  opts: { lateOpenAt?: string; pending?: boolean; pendingDelivery?: boolean } = {},
): Promise<void> {
  const to = `${id}@example.com`;
  const events = opts.pending
    ? [
        {
          type: 'email.queued',
          occurredAt: createdAt,
          data: { toEmail: to, subject: `About ${id}`, scheduledAt: '2026-06-20T00:00:00.000Z' },
        },
      ]
    : [
        { type: 'email.queued', occurredAt: createdAt, data: { toEmail: to, subject: `About ${id}` } },
        {
          type: 'email.sent',
          occurredAt: minutesAfter(createdAt, 1),
          data: { provider: 'sandbox', messageId: `<${id}@tern>` },
        },
        { type: 'email.delivered', occurredAt: minutesAfter(createdAt, 2) },
        { type: 'email.opened', occurredAt: opts.lateOpenAt ?? minutesAfter(createdAt, 10) },
      ];
  await project(stores, eventsOf(tenant, id, events));
  await stores.pool.query(
    `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, attempts, message, scheduled_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
    [
      tenant,
      id,
      opts.pending ? 'pending' : 'done',
      opts.pending ? '2026-06-20T00:00:00.000Z' : createdAt,
      opts.pending ? 0 : 1,
      { from: 'app@tern.test', to, subject: `About ${id}`, html: `<p>Hello ${to}</p>` },
      opts.pending ? '2026-06-20T00:00:00.000Z' : null,
      createdAt,
    ],
  );
  if (opts.pending) return;
  await keptBySandbox(tenant, id, minutesAfter(createdAt, 1));
  const { rows } = await stores.pool.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, request_body,
                                     recipient, status, attempts, next_attempt_at, created_at, updated_at)
     VALUES ($1, 'wh_ret', $2 || ':sent', 'email.sent', $2, '{}', $3, $4, 'delivered', 1, $5, $5, $5)
     RETURNING id`,
    [tenant, id, JSON.stringify({ data: { to, subject: `About ${id}` } }), to, minutesAfter(createdAt, 1)],
  );
  await stores.pool.query(
    `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code)
     VALUES ($1, 1, $2, 12, 200)`,
    [rows[0]!.id, minutesAfter(createdAt, 1)],
  );
  if (opts.pendingDelivery) {
    // Still being retried by the dispatcher: its queue, not this job's to delete.
    await stores.pool.query(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, recipient,
                                       status, attempts, next_attempt_at, created_at, updated_at)
       VALUES ($1, 'wh_ret', $2 || ':opened', 'email.opened', $2, '{}', $3, 'pending', 3, $4, $5, $5)`,
      [tenant, id, to, '2026-06-15T13:00:00.000Z', minutesAfter(createdAt, 10)],
    );
  }
}

async function keptBySandbox(tenant: string, id: string, at: string): Promise<void> {
  await stores.pool.query(
    'INSERT INTO sandbox_messages (tenant_id, email_id, message, created_at) VALUES ($1, $2, $3, $4)',
    [tenant, id, { to: `${id}@example.com`, subject: `About ${id}`, html: '<p>Hello</p>' }, at],
  );
}

/** `count` emails of `tenant` over the three days before `now`, their ids marked `${mark}-`, projected. */
async function projectMarked(tenant: string, now: string, count: number, seed: number, mark: string) {
  const marked = generateEmails({ tenantId: tenant, now, count, seed, spanDays: 3, templates: ['t1'] })
    .slice(0, count)
    .map((e) => ({ ...e, id: `${mark}-${e.id}` }));
  await project(stores, eventsFor(marked, seed + 1));
}

const ALL = { logs: 1, events: 4, sends: 1, sandbox: 1, deliveries: 1, attempts: 1 };
const NONE = { logs: 0, events: 0, sends: 0, sandbox: 0, deliveries: 0, attempts: 0 };

const job = (batchSize = 7) =>
  createRetentionJob({
    pool: stores.pool,
    ch: stores.ch,
    now: clock.now,
    defaultRetentionDays: DEFAULT_RETENTION_DAYS,
    batchSize,
    intervalMs: 50,
  });

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  for (const [i, tenant] of [D, S, L].entries()) {
    emails[tenant] = generateEmails({
      tenantId: tenant,
      now: NOW,
      count: 120,
      seed: 20 + i,
      spanDays: 250,
      templates: ['t1'],
    });
  }
  await project(stores, eventsFor([...emails[D]!, ...emails[S]!, ...emails[L]!], 30));
  for (const tenant of [S, L]) {
    const res = await app.inject({
      method: 'PUT',
      url: `/tenants/${tenant}/settings`,
      headers: bearer(jwtFor(clock, tenant, 'admin')),
      payload: { retentionDays: RETENTION[tenant] },
    });
    expect(res.statusCode).toBe(200);
  }
});

afterAll(async () => {
  await app?.close();
  await stores?.close();
});

describe('retention job', () => {
  it('deletes exactly the expired rows and days, per tenant, and changes nothing visible', async () => {
    const before: Record<string, { view: unknown; days: Record<string, number>[] }> = {};
    let expectedDeleted = 0;
    for (const tenant of [D, S, L]) {
      before[tenant] = { view: await apiView(tenant), days: await chDays(tenant) };
      expectedDeleted += emails[tenant]!.filter((e) => e.createdAt < cutoffOf(tenant)).length;
    }
    expect(expectedDeleted).toBeGreaterThan(50);
    // Their timelines go with them, and the message ids of the sent ones (SPEC §21).
    let expectedContent = 0;
    for (const tenant of [D, S, L]) {
      const expired = emails[tenant]!.filter((e) => e.createdAt < cutoffOf(tenant)).map((e) => e.id);
      const { rows } = await stores.pool.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM email_events WHERE tenant_id = $1 AND email_id = ANY($2::text[]))::int
              + (SELECT count(*) FROM provider_messages WHERE tenant_id = $1 AND email_id = ANY($2::text[]))::int AS n`,
        [tenant, expired],
      );
      expectedContent += rows[0]!.n;
    }
    expect(expectedContent).toBeGreaterThan(expectedDeleted);

    const result = await job(7).runOnce();
    expect(result).toEqual({
      ran: true,
      deletedLogs: expectedDeleted,
      // The emails' ids are of no day with a partition: their rows are deleted, not dropped.
      droppedLogDays: 0,
      deletedContent: expectedContent,
      // One DELETE per rollup table holding expired days: email_daily_v2, email_dims_v1 and its tag
      // companion email_dims_v1_tags, per each of the 3 scopes.
      clickhouseDeletes: 9,
    });

    for (const tenant of [D, S, L]) {
      const cutoff = cutoffOf(tenant);
      const kept = emails[tenant]!.filter((e) => e.createdAt >= cutoff).map((e) => e.id);
      expect(await pgIds(tenant)).toEqual(kept.sort());
      const { rows: timelines } = await stores.pool.query<{ id: string }>(
        'SELECT DISTINCT email_id AS id FROM email_events WHERE tenant_id = $1 ORDER BY 1',
        [tenant],
      );
      expect(timelines.map((r) => r.id)).toEqual(kept);
      const cutoffDay = Number(isoDay(cutoff).replaceAll('-', ''));
      const days = await chDays(tenant);
      expect(days.every((d) => d.day! >= cutoffDay)).toBe(true);
      // The sliceable rollup and its tag companion kept no day before the cut-off either.
      for (const table of ['email_dims_v1', 'email_dims_v1_tags']) {
        const old = await stores.ch.query({
          query: `SELECT count() AS n FROM ${table} WHERE tenant_id = {tenant:String} AND day < {day:Date}`,
          query_params: { tenant, day: isoDay(cutoff) },
          format: 'JSONEachRow',
        });
        expect(await old.json(), table).toEqual([{ n: 0 }]);
      }
      expect(days).toEqual(before[tenant]!.days.filter((d) => d.day! >= cutoffDay));
      // Query-time cut-off and physical deletion agree: the API shows the same before and after.
      expect(await apiView(tenant)).toEqual(before[tenant]!.view);
      // The log counters of days and hours before the cut-off went with the rows.
      const { rows: counters } = await stores.pool.query<{ days: string; hours: string }>(
        `SELECT (SELECT count(*) FROM email_log_counts WHERE tenant_id = $1 AND day < $2::date)::text AS days,
                (SELECT count(*) FROM email_log_hour_counts WHERE tenant_id = $1 AND hour < $3::timestamptz)::text AS hours`,
        [tenant, isoDay(cutoff), cutoff.toISOString()],
      );
      expect(counters[0]).toEqual({ days: '0', hours: '0' });
    }
    // The long override kept more than the default would have.
    expect(emails[L]!.some((e) => e.createdAt < cutoffOf(D) && e.createdAt >= cutoffOf(L))).toBe(true);

    expect(await job(7).runOnce()).toEqual({
      ran: true,
      deletedLogs: 0,
      droppedLogDays: 0,
      deletedContent: 0,
      clickhouseDeletes: 0,
    });
  });

  it('runs on one instance at a time (advisory lock)', async () => {
    await projectMarked(D, '2026-01-01T00:00:00.000Z', 5, 40, 'lock');
    const holder = await stores.pool.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [RETENTION_LOCK_KEY]);
      expect(await job().runOnce()).toEqual({
        ran: false,
        deletedLogs: 0,
        droppedLogDays: 0,
        deletedContent: 0,
        clickhouseDeletes: 0,
      });
      expect((await pgIds(D)).filter((id) => id.startsWith('lock-'))).toHaveLength(5);
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK_KEY]);
      holder.release();
    }
    expect(await job().runOnce()).toMatchObject({ ran: true, deletedLogs: 5, clickhouseDeletes: 3 });
  });

  it('runs on its schedule once started, and stops', async () => {
    await projectMarked(S, '2026-05-01T00:00:00.000Z', 3, 50, 'sched');
    const scheduled = job(2);
    scheduled.start();
    try {
      await waitFor(async () => (await pgIds(S)).every((id) => !id.startsWith('sched-')), {
        description: 'the scheduled run to delete the expired rows',
      });
    } finally {
      await scheduled.stop();
    }
    const cutoffDay = Number(isoDay(cutoffOf(S)).replaceAll('-', ''));
    expect((await chDays(S)).every((d) => d.day! >= cutoffDay)).toBe(true);
  });

  it('deletes the data keys of months wholly before each tenant’s cut-off: old sealed content is unreadable (SPEC §14)', async () => {
    const keyring = createKeyring({ pool: stores.pool, encryptionKey: ENCRYPTION_KEY });
    const months = ['2025-10', '2026-02', '2026-03', '2026-05', '2026-06'];
    const sealed: Record<string, Sealed> = {};
    for (const tenant of [D, S, L])
      for (const m of months)
        sealed[`${tenant} ${m}`] = await keyring.seal(
          tenant,
          `em_${m}`,
          'old@example.com',
          new Date(`${m}-01T00:00:00Z`),
          {
            subject: `subject of ${m}`,
          },
        );
    const result = await createRetentionJob({
      pool: stores.pool,
      ch: stores.ch,
      now: clock.now,
      defaultRetentionDays: DEFAULT_RETENTION_DAYS,
      keyring,
    }).runOnce();
    // Cut-offs: D 2026-03-17, S 2026-06-05, L 2025-11-27; a month partly inside the window keeps its key.
    const kept: Record<string, string[]> = {
      [D]: ['2026-03', '2026-05', '2026-06'],
      [S]: ['2026-06'],
      [L]: ['2026-02', '2026-03', '2026-05', '2026-06'],
    };
    expect(result.deletedKeys).toBe(15 - 3 - 1 - 4);
    for (const tenant of [D, S, L]) {
      const { rows } = await stores.pool.query<{ period: string }>(
        'SELECT period FROM data_keys WHERE tenant_id = $1 ORDER BY period',
        [tenant],
      );
      expect(rows.map((r) => r.period)).toEqual(kept[tenant]);
      for (const m of months) {
        const opened = await keyring.open(tenant, `em_${m}`, sealed[`${tenant} ${m}`]!);
        expect(opened).toEqual(kept[tenant]!.includes(m) ? { subject: `subject of ${m}` } : null);
      }
    }
  });

  it('deletes an expired email’s timeline, send, sandbox message and webhook deliveries with its log row, and keeps a visible email’s and other tenants’ (SPEC §14)', async () => {
    // D: expired (late open after the cut-off: it goes too, by email id), visible, and expired
    // but scheduled for later; S: visible under the default, expired under its 10 days; L: expired
    // under the default, visible under its 200 days.
    await sentEmail(D, 'em_exp', '2026-03-01T08:00:00.000Z', {
      lateOpenAt: '2026-06-10T08:00:00.000Z',
      pendingDelivery: true,
    });
    await sentEmail(D, 'em_vis', '2026-06-01T08:00:00.000Z');
    await sentEmail(D, 'em_sched', '2026-03-01T09:00:00.000Z', { pending: true });
    await sentEmail(S, 'em_short', '2026-05-20T08:00:00.000Z');
    await sentEmail(L, 'em_long', '2026-01-01T08:00:00.000Z');
    const scheduled = await rowsOf(D, 'em_sched');
    expect(scheduled).toEqual({ ...NONE, logs: 1, events: 1, sends: 1 });

    const result = await job(7).runOnce();
    // Two emails, each with 4 events, its send, its sandbox copy, one finished delivery and the
    // message id its email.sent recorded (provider_messages, SPEC §21).
    expect(result).toMatchObject({ ran: true, deletedLogs: 2, deletedContent: 2 * 8 });
    // The pending delivery stays the dispatcher's until it is finished (then swept, see below).
    expect(await rowsOf(D, 'em_exp')).toEqual({ ...NONE, deliveries: 1 });
    expect(await rowsOf(S, 'em_short')).toEqual(NONE);
    expect(await rowsOf(D, 'em_vis')).toEqual(ALL);
    expect(await rowsOf(L, 'em_long')).toEqual(ALL);
    // A send still due keeps everything (the sender needs its content), its log row too.
    expect(await rowsOf(D, 'em_sched')).toEqual(scheduled);
    const { rows: content } = await stores.pool.query<{ n: number }>(
      `SELECT ((SELECT count(*) FROM email_events WHERE data::text LIKE '%em_exp@%' OR data::text LIKE '%em_short@%')
             + (SELECT count(*) FROM webhook_deliveries WHERE recipient IN ('em_exp@example.com', 'em_short@example.com')
                  AND status <> 'pending'))::int AS n`,
    );
    expect(content[0]!.n).toBe(0);

    // The sender hands it over and finishes: the next run takes the whole email.
    await project(
      stores,
      eventsOf(D, 'em_sched', [
        {
          type: 'email.sent',
          occurredAt: '2026-06-15T11:00:00.000Z',
          data: { provider: 'sandbox', messageId: '<em_sched@tern>' },
        },
        { type: 'email.delivered', occurredAt: '2026-06-15T11:00:01.000Z' },
      ]),
    );
    await stores.pool.query(
      `UPDATE outgoing_emails SET state = 'done', attempts = 1 WHERE tenant_id = $1 AND id = 'em_sched'`,
      [D],
    );
    await keptBySandbox(D, 'em_sched', '2026-06-15T11:00:00.000Z');
    expect(await job(7).runOnce()).toMatchObject({
      ran: true,
      deletedLogs: 1,
      deletedContent: 3 + 1 + 1 + 1,
    });
    expect(await rowsOf(D, 'em_sched')).toEqual(NONE);
    expect(await rowsOf(D, 'em_vis')).toEqual(ALL);
  });

  it('sweeps what an earlier job left behind: content older than each tenant’s cut-off whose log row is gone, never a visible email’s or a pending send’s', async () => {
    // The delivery left pending above has finished since: the sweep takes it (its email is gone).
    await stores.pool.query(
      `UPDATE webhook_deliveries SET status = 'delivered' WHERE tenant_id = $1 AND email_id = 'em_exp'`,
      [D],
    );
    // What the job did before it deleted content: the log rows went, the rest stayed.
    await sentEmail(D, 'em_orphan', '2026-03-02T08:00:00.000Z', { lateOpenAt: '2026-06-12T08:00:00.000Z' });
    await sentEmail(S, 'em_orphan_short', '2026-05-25T08:00:00.000Z');
    await sentEmail(D, 'em_orphan_young', '2026-05-25T08:00:00.000Z');
    await sentEmail(D, 'em_orphan_sched', '2026-03-02T09:00:00.000Z', { pending: true });
    await stores.pool.query(
      `DELETE FROM email_logs WHERE (tenant_id = $1 AND id IN ('em_orphan', 'em_orphan_young', 'em_orphan_sched'))
          OR (tenant_id = $2 AND id = 'em_orphan_short')`,
      [D, S],
    );
    // A visible email whose outside pipeline posted an event dated before its queued one.
    await project(
      stores,
      eventsOf(D, 'em_vis', [{ type: 'email.delivered', occurredAt: '2026-03-01T00:00:00.000Z' }]),
    );

    const result = await job(2).runOnce();
    // em_orphan: 3 events before the cut-off, send, sandbox, delivery, message id; em_orphan_short:
    // 4 events, send, sandbox, delivery, message id; em_exp: its finished delivery.
    expect(result).toMatchObject({ ran: true, deletedLogs: 0, deletedContent: 7 + 8 + 1 });
    // The open after D's cut-off is younger than it: it goes once it is older, like every row.
    expect(await rowsOf(D, 'em_orphan')).toEqual({ ...NONE, events: 1 });
    expect(await rowsOf(S, 'em_orphan_short')).toEqual(NONE);
    expect(await rowsOf(D, 'em_exp')).toEqual(NONE);
    // Younger than D's cut-off (older than S's): kept. A send still due: kept with its timeline.
    expect(await rowsOf(D, 'em_orphan_young')).toEqual({ ...ALL, logs: 0 });
    expect(await rowsOf(D, 'em_orphan_sched')).toEqual({ ...NONE, events: 1, sends: 1 });
    expect(await rowsOf(D, 'em_vis')).toEqual({ ...ALL, events: 5 });
    expect(await rowsOf(L, 'em_long')).toEqual(ALL);

    expect(await job(2).runOnce()).toMatchObject({ ran: true, deletedLogs: 0, deletedContent: 0 });
  });

  it('deletes received mail (SPEC §24) from before each tenant’s cut-off, announced or not, and keeps the rest', async () => {
    const keyring = createKeyring({ pool: stores.pool, encryptionKey: ENCRYPTION_KEY });
    // No DNS here: every verdict is reached as "none"/"temperror" at once.
    const noDns: DnsResolve = async (name) => {
      throw Object.assign(new Error(`no ${name}`), { code: 'ENOTFOUND' });
    };
    /** A message received at `at` through the real pipeline; `logDown`: stored, its event refused (451). */
    const receive = async (tenant: string, at: string, n: string, logDown = false): Promise<string> => {
      const raw = Buffer.from(
        [
          'From: Ann <ann@sender.test>',
          `To: in@${tenant}.test`,
          `Subject: kept until ${n}`,
          `Message-ID: <${n}-${tenant}@sender.test>`,
          '',
          `Body ${n}`,
          '',
        ].join('\r\n'),
      );
      const deps = {
        pool: stores.pool,
        keyring,
        log: {
          append: async () => {
            if (logDown) throw new Error('log down (test)');
          },
        },
        resolve: noDns,
        now: () => new Date(at),
      };
      const envelope = {
        recipients: [{ address: `in@${tenant}.test`, tenantId: tenant }],
        clientIp: '192.0.2.1',
        helo: 'mx.sender.test',
        sender: 'ann@sender.test',
        mta: 'mx.tern.test',
      };
      if (!logDown) return (await receiveMessage(deps, raw, envelope))[0]!;
      await expect(receiveMessage(deps, raw, envelope)).rejects.toThrow('log down');
      const { rows } = await stores.pool.query<{ id: string }>(
        'SELECT id FROM inbound_messages WHERE tenant_id = $1 AND NOT announced AND received_at = $2',
        [tenant, at],
      );
      return rows[0]!.id;
    };
    const day = 86_400_000;
    const around = (tenant: string) => {
      const cutoff = cutoffOf(tenant).getTime();
      return { before: new Date(cutoff - day).toISOString(), after: new Date(cutoff + day).toISOString() };
    };
    const expected: Record<string, { gone: string[]; kept: string[] }> = {};
    for (const tenant of [D, S, L]) {
      const { before, after } = around(tenant);
      expected[tenant] = {
        gone: [await receive(tenant, before, 'old'), await receive(tenant, before, 'old-unannounced', true)],
        kept: [await receive(tenant, after, 'new'), await receive(tenant, after, 'new-unannounced', true)],
      };
    }
    const result = await job().runOnce();
    expect(result.deletedContent).toBeGreaterThanOrEqual(6);
    for (const tenant of [D, S, L]) {
      const { rows } = await stores.pool.query<{ id: string }>(
        'SELECT id FROM inbound_messages WHERE tenant_id = $1 ORDER BY id',
        [tenant],
      );
      expect(rows.map((r) => r.id)).toEqual([...expected[tenant]!.kept].sort());
    }
  });

  it('deletes DMARC aggregate reports (SPEC §26) received before each tenant’s cut-off, with their records; the read hides them at once', async () => {
    const dmarc = createDmarcConsumer({ pool: stores.pool, logger: { info: () => {}, warn: () => {} } });
    const domainOf = (tenant: string) => `${tenant}.test`;
    /** One report attachment mailed to the tenant at `at` (a parsable one, or a refused one). */
    const report = async (tenant: string, at: Date, n: string, refused = false) => {
      const domain = domainOf(tenant);
      const xml = reportXml({ domain, reportId: n, rows: [{ ip: '192.0.2.10', count: 3 }] });
      const content = refused ? Buffer.from('not gzip, not xml') : gzip(xml);
      const message = {
        id: `inb-${n}-${tenant}`,
        tenantId: tenant,
        subject: `Report Domain: ${domain} Submitter: google.com Report-ID: ${n}`,
        receivedAt: at,
        fresh: true,
        parsed: {
          attachments: [
            {
              filename: `google.com!${domain}!1700000000!1700086399!${n}.xml.gz`,
              contentType: 'application/gzip',
              content,
              // As mailparser gives it; an attachment whose bytes were not kept has content shorter than size.
              size: content.length,
            },
          ],
        },
      } as unknown as ReceivedMessage;
      const [outcome] = await dmarc(message);
      expect(outcome?.status).toBe(refused ? 'rejected' : 'stored');
    };
    const reportsOf = async (tenant: string) =>
      (
        await stores.pool.query<{ report_id: string | null; status: string; records: number }>(
          `SELECT r.report_id, r.status, (SELECT count(*)::int FROM dmarc_records d WHERE d.report_id = r.id) AS records
             FROM dmarc_reports r WHERE r.tenant_id = $1 ORDER BY r.status, r.report_id`,
          [tenant],
        )
      ).rows;
    const day = 86_400_000;
    for (const tenant of [D, S, L]) {
      const cutoff = cutoffOf(tenant).getTime();
      await report(tenant, new Date(cutoff - day), 'old');
      await report(tenant, new Date(cutoff - 1), 'old-refused', true);
      await report(tenant, new Date(cutoff + day), 'new');
      await report(tenant, new Date(cutoff), 'new-refused', true);
      // Before the job: the read with the tenant's cut-off (what the route passes) shows only the new one.
      const summary = await dmarcSummary(stores.pool, tenant, domainOf(tenant), 365, cutoffOf(tenant));
      expect([summary.reports, summary.messages]).toEqual([1, 3]);
      expect((await dmarcSummary(stores.pool, tenant, domainOf(tenant), 365)).reports).toBe(2);
    }
    const result = await job().runOnce();
    expect(result.deletedContent).toBeGreaterThanOrEqual(6);
    for (const tenant of [D, S, L])
      expect(await reportsOf(tenant)).toEqual([
        { report_id: null, status: 'rejected', records: 0 },
        { report_id: 'new', status: 'stored', records: 1 },
      ]);
    // The records of the deleted reports went with them.
    const orphans = await stores.pool.query(
      'SELECT 1 FROM dmarc_records d WHERE NOT EXISTS (SELECT 1 FROM dmarc_reports r WHERE r.id = d.report_id)',
    );
    expect(orphans.rowCount).toBe(0);
  });
  it('drops a day of the log whose every email expired (migration 0560) and sweeps their content; a day with a kept email stays, its expired ones deleted; a drop that waits too long is left to the next run', async () => {
    // Two days long before D's and S's cut-offs; on the second, an email of L, whose 200 days keep it.
    const [old, kept] = ['2026-01-05', '2026-01-06'];
    expect((await ensureLogDays(stores.pool, new Date(`${old}T00:00:00Z`), 2)).made).toEqual([
      logDay(new Date(`${old}T00:00:00Z`)).name,
      logDay(new Date(`${kept}T00:00:00Z`)).name,
    ]);
    const idOn = (day: string, n: number) => `em_${idTime(Date.parse(`${day}T08:00:00Z`) + n)}ret${n}`;
    await sentEmail(D, idOn(old, 1), `${old}T08:00:00.000Z`);
    await sentEmail(S, idOn(old, 2), `${old}T09:00:00.000Z`);
    await sentEmail(L, idOn(kept, 3), `${kept}T08:00:00.000Z`);
    await sentEmail(D, idOn(kept, 4), `${kept}T09:00:00.000Z`);
    const { rows } = await stores.pool.query<{ id: string; t: string }>(
      'SELECT id, tableoid::regclass::text AS t FROM email_logs WHERE id = ANY ($1) ORDER BY id',
      [[idOn(old, 1), idOn(old, 2), idOn(kept, 3), idOn(kept, 4)]],
    );
    expect(rows.map((r) => r.t)).toEqual(
      [old, old, kept, kept].map((d) => logDay(new Date(`${d}T00:00:00Z`)).name),
    );

    // A reader holding the old day past the drop's lock timeout (3 s): the run goes on without the
    // drop and deletes every expired email row by row, the old day's two and the kept day's one.
    const reader = await stores.pool.connect();
    try {
      await reader.query('BEGIN');
      await reader.query(`LOCK TABLE ${logDay(new Date(`${old}T00:00:00Z`)).name} IN ACCESS SHARE MODE`);
      expect(await job().runOnce()).toMatchObject({ ran: true, droppedLogDays: 0, deletedLogs: 3 });
    } finally {
      await reader.query('ROLLBACK');
      reader.release();
    }
    // The next run drops the old day, empty by now.
    expect(await job().runOnce()).toMatchObject({ ran: true, droppedLogDays: 1, deletedLogs: 0 });
    // Once more, with a day of expired emails and no reader: the day goes whole.
    const older = '2026-01-04';
    await ensureLogDays(stores.pool, new Date(`${older}T00:00:00Z`), 1);
    await sentEmail(D, idOn(older, 5), `${older}T08:00:00.000Z`);
    await sentEmail(S, idOn(older, 6), `${older}T09:00:00.000Z`);
    expect(await job().runOnce()).toMatchObject({ ran: true, droppedLogDays: 1, deletedLogs: 2 });
    expect(await rowsOf(D, idOn(older, 5))).toEqual(NONE);
    expect(await rowsOf(S, idOn(older, 6))).toEqual(NONE);
    const days = (await logDays(stores.pool)).map((d) => d.name);
    expect(days).not.toContain(logDay(new Date(`${old}T00:00:00Z`)).name);
    expect(days).not.toContain(logDay(new Date(`${older}T00:00:00Z`)).name);
    expect(days).toContain(logDay(new Date(`${kept}T00:00:00Z`)).name);
    expect(await rowsOf(D, idOn(old, 1))).toEqual(NONE);
    expect(await rowsOf(S, idOn(old, 2))).toEqual(NONE);
    expect(await rowsOf(L, idOn(kept, 3))).toEqual(ALL);
    expect(await rowsOf(D, idOn(kept, 4))).toEqual(NONE);
    // And the days ahead of the job's clock were made.
    expect(days).toContain(logDay(new Date(clock.now().getTime() + 86_400_000)).name);
  });
});
