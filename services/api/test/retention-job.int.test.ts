import { createKeyring, type Sealed } from '@tern/privacy';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { createRetentionJob, RETENTION_LOCK_KEY } from '../src/index.js';
import { eventsFor, type GeneratedEmail, generateEmails } from './dataset.js';
import {
  bearer,
  buildApp,
  createClock,
  DEFAULT_RETENTION_DAYS,
  dayStart,
  ENCRYPTION_KEY,
  isoDay,
  jwtFor,
  NOW,
  openStores,
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
  stores = await openStores();
  app = await buildApp(stores, clock);
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
    // Their timelines go with them (nothing else holds these emails).
    let expectedContent = 0;
    for (const tenant of [D, S, L]) {
      const expired = emails[tenant]!.filter((e) => e.createdAt < cutoffOf(tenant)).map((e) => e.id);
      const { rows } = await stores.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM email_events WHERE tenant_id = $1 AND email_id = ANY($2::text[])',
        [tenant, expired],
      );
      expectedContent += rows[0]!.n;
    }
    expect(expectedContent).toBeGreaterThan(expectedDeleted);

    const result = await job(7).runOnce();
    expect(result).toEqual({
      ran: true,
      deletedLogs: expectedDeleted,
      deletedContent: expectedContent,
      clickhouseDeletes: 3,
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
      deletedContent: 0,
      clickhouseDeletes: 0,
    });
  });

  it('runs on one instance at a time (advisory lock)', async () => {
    const expired = generateEmails({
      tenantId: D,
      now: '2026-01-01T00:00:00.000Z',
      count: 5,
      seed: 40,
      spanDays: 3,
      templates: ['t1'],
    })
      .slice(0, 5)
      .map((e) => ({ ...e, id: `lock-${e.id}` }));
    await project(stores, eventsFor(expired, 41));
    const holder = await stores.pool.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [RETENTION_LOCK_KEY]);
      expect(await job().runOnce()).toEqual({
        ran: false,
        deletedLogs: 0,
        deletedContent: 0,
        clickhouseDeletes: 0,
      });
      expect((await pgIds(D)).filter((id) => id.startsWith('lock-'))).toHaveLength(5);
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK_KEY]);
      holder.release();
    }
    expect(await job().runOnce()).toMatchObject({ ran: true, deletedLogs: 5, clickhouseDeletes: 1 });
  });

  it('runs on its schedule once started, and stops', async () => {
    const expired = generateEmails({
      tenantId: S,
      now: '2026-05-01T00:00:00.000Z',
      count: 3,
      seed: 50,
      spanDays: 3,
      templates: ['t1'],
    })
      .slice(0, 3)
      .map((e) => ({ ...e, id: `sched-${e.id}` }));
    await project(stores, eventsFor(expired, 51));
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
});
