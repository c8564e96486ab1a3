import type { ClickHouseClient } from '@clickhouse/client';
import { DEFAULT_RETENTION_DAYS } from '@tern/config';
import type { DeliveryEvent } from '@tern/contracts';
import {
  type AnalyticsCounters,
  addCounters,
  contribution,
  DAY_MS,
  foldEmail,
  zeroCounters,
} from '@tern/domain';
import { ensureLogDays, LOG_DAYS_AHEAD } from '@tern/read-models';
import { createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import pg from 'pg';
import { createFreshDatabase, type FreshDatabase, tempDir } from './services.js';

/**
 * Day partitions of `email_logs` a deployed log holds (`BENCH_LOG_DAYS`, default 94): the default
 * retention's 90 past days, today and the retention job's `LOG_DAYS_AHEAD` (3). 0: none, every row in the
 * DEFAULT partition, as a database before migration 0560 or a worker that never ran. The projection
 * and pgwork benches make them; the others opening a database here still make none (not measured).
 */
export const BENCH_LOG_DAYS = Number(
  process.env.BENCH_LOG_DAYS ?? DEFAULT_RETENTION_DAYS + 1 + LOG_DAYS_AHEAD,
);
if (!(BENCH_LOG_DAYS === 0 || (Number.isInteger(BENCH_LOG_DAYS) && BENCH_LOG_DAYS >= 1 + LOG_DAYS_AHEAD)))
  throw new Error(
    `BENCH_LOG_DAYS must be 0 or an integer ≥ ${1 + LOG_DAYS_AHEAD} (today and the days ahead at least)`,
  );

/** The first of `days` day partitions ending `LOG_DAYS_AHEAD` days after today, as the retention job keeps them. */
export const logDaysFrom = (days: number): Date =>
  new Date(Date.now() - (days - 1 - LOG_DAYS_AHEAD) * DAY_MS);

/** A fresh migrated Postgres database, with its pool and `logDays` (default 0) day partitions of the log. */
export async function openProjectionDatabase(
  adminUrl: string,
  opts: { max?: number; Client?: typeof pg.Client; logDays?: number } = {},
): Promise<{ db: FreshDatabase; pool: pg.Pool; close(): Promise<void> }> {
  const db = await createFreshDatabase(adminUrl);
  const pool = new pg.Pool({
    connectionString: db.url,
    max: opts.max ?? 10,
    ...(opts.Client ? { Client: opts.Client } : {}),
  });
  // DROP DATABASE … WITH (FORCE) ends connections still open at the end; expected.
  pool.on('error', () => {});
  await migratePostgres(pool);
  const logDays = opts.logDays ?? 0;
  if (logDays > 0) await ensureLogDays(pool, logDaysFrom(logDays), logDays);
  return {
    db,
    pool,
    async close() {
      await pool.end().catch(() => {});
      await db.drop();
    },
  };
}

/** Embedded chDB in a temp dir (the default deployment), migrated. One per process. */
export async function openChdb(): Promise<{ ch: ClickHouseClient; close(): Promise<void> }> {
  const dir = tempDir('tern-bench-chdb-');
  const store = createClickHouse({ dataDir: dir.path });
  await migrateClickHouse(store.client);
  return {
    ch: store.client,
    async close() {
      await store.close();
      dir.remove();
    },
  };
}

/** What the projections must hold once every event is folded: the fold of each email, summed. */
export function expectedTotals(events: readonly DeliveryEvent[]): {
  emails: number;
  counters: AnalyticsCounters;
} {
  const byEmail = new Map<string, DeliveryEvent[]>();
  for (const e of events) {
    const k = `${e.tenantId}\u0000${e.emailId}`;
    const list = byEmail.get(k);
    if (list) list.push(e);
    else byEmail.set(k, [e]);
  }
  let counters = zeroCounters();
  let emails = 0;
  for (const list of byEmail.values()) {
    const c = contribution(foldEmail(list));
    if (c) {
      emails++;
      counters = addCounters(counters, c.counters);
    }
  }
  return { emails, counters };
}

/** What the projections hold now: visible Postgres rows and the ClickHouse sums. */
export async function actualTotals(
  pool: pg.Pool,
  ch: ClickHouseClient,
  tenantPrefix: string,
): Promise<{ emails: number; counters: AnalyticsCounters }> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM email_logs WHERE created_at IS NOT NULL AND tenant_id LIKE $1 || '%'`,
    [tenantPrefix],
  );
  const rs = await ch.query({
    query: `SELECT sum(total) AS total, sum(sent) AS sent, sum(opened) AS opened, sum(clicked) AS clicked,
                   sum(bounced) AS bounced, sum(complained) AS complained, sum(failed) AS failed
              FROM email_daily_v2 WHERE startsWith(tenant_id, {p:String})`,
    query_params: { p: tenantPrefix },
    format: 'JSONEachRow',
  });
  const [sums] = await rs.json<Record<keyof AnalyticsCounters, string | number>>();
  const counters = zeroCounters();
  for (const k of Object.keys(counters) as (keyof AnalyticsCounters)[]) counters[k] = Number(sums?.[k] ?? 0);
  return { emails: Number(rows[0]?.n ?? 0), counters };
}
