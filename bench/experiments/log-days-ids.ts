/**
 * Issue 45 item 4, the log partitioned by day at its steady state: what the statements that read
 * `email_logs` cost once it holds the default retention's days (90 past days, today and 3 ahead:
 * 94 partitions), against the same rows in a log with no day made (all in its DEFAULT, as a log
 * is before the migration), each in a database of its own. `LOGIDS_KIND=server` (default: a
 * Postgres server of its own) or `pglite` (the embedded default: one data directory each);
 * `LOGIDS_PER_DAY` rows a day (default 20 000 on a server, 2 000 on PGlite) over 100 tenants;
 * each statement `LOGIDS_RUNS` times (default 30), the median round trip:
 *
 *   - the projector's lock of the 500 newest emails (`lockEmails`, in `BEGIN … ROLLBACK`), and on
 *     the days also as it was before `amongIds` (the join on `unnest` alone);
 *   - the dispatcher's read of 100 emails' states (`emailViewsAt`), and on the days the claim's
 *     join of `projectedEmailStateSql` it replaced;
 *   - the logs list's first page of a tenant and its page after a cursor 500 entries in
 *     (`logsPage`, the api's statement), and a lookup by key (`emailIsVisible`).
 *
 *   npx tsx bench/experiments/log-days-ids.ts
 */
import { DAY_MS, retentionCutoff } from '@tern/domain';
import { idTime } from '@tern/kernel';
import {
  emailIsVisible,
  emailViewsAt,
  ensureLogDays,
  LOG_DAYS_AHEAD,
  type LogsCursor,
  lockEmails,
  logsPage,
  projectedEmailStateSql,
} from '@tern/read-models';
import { createPostgres, migratePostgres } from '@tern/stores';
import pg from 'pg';
import { startDedicatedPostgres } from '../../test/faults/servers.js';
import { createNamedDatabase, tempDir } from '../../test/support/services.js';

const KIND = process.env.LOGIDS_KIND ?? 'server';
const PER_DAY = Number(process.env.LOGIDS_PER_DAY ?? (KIND === 'pglite' ? 2_000 : 20_000));
const RUNS = Number(process.env.LOGIDS_RUNS ?? 30);
const TENANTS = 100;
const PAST = 90;
const say = (s: string) => console.log(`[log-days-ids ${KIND}] ${s}`);
const f = (ms: number) => `${ms.toFixed(2)} ms`;

/** The median of `RUNS` round trips of `fn`, in ms (after one not counted). */
async function median(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const s = performance.now();
    await fn();
    times.push(performance.now() - s);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
const step = Math.floor(DAY_MS / PER_DAY);

/** The log filled with the same rows, its days made first or not. */
async function fill(pool: pg.Pool, withDays: boolean): Promise<void> {
  await migratePostgres(pool);
  if (withDays) await ensureLogDays(pool, new Date(today - PAST * DAY_MS), PAST + 1 + LOG_DAYS_AHEAD);
  for (let d = -PAST; d <= 0; d++) {
    const t0 = today + d * DAY_MS;
    const n = d === 0 ? Math.min(PER_DAY, Math.floor((Date.now() - today) / step)) : PER_DAY;
    const ids = Array.from(
      { length: n },
      (_, k) => `em_${idTime(t0 + k * step)}${String(k).padStart(16, '0')}`,
    );
    await pool.query(
      `INSERT INTO email_logs (tenant_id, id, status, created_at, state, version, to_email, subject)
       SELECT 't' || (k % ${TENANTS}), i, 'DELIVERED', to_timestamp(($2::bigint + (k - 1) * $3::bigint) / 1000.0),
              jsonb_build_object('queued', jsonb_build_object('tags', '[]'::jsonb)), 1, 'user' || k || '@example.com', 'Subject'
         FROM unnest($1::text[]) WITH ORDINALITY AS u(i, k)`,
      [ids, t0, step],
    );
  }
  await pool.query('VACUUM ANALYZE email_logs');
}

type Figures = Record<string, number>;

async function measure(pool: pg.Pool, withDays: boolean): Promise<Figures> {
  const out: Figures = {};
  const batch = (
    await pool.query<{ tenant_id: string; id: string }>(
      'SELECT tenant_id, id FROM email_logs ORDER BY id DESC LIMIT 500',
    )
  ).rows.map((r) => ({ tenantId: r.tenant_id, emailId: r.id }));
  const client = await pool.connect();
  try {
    const inTx = (fn: () => Promise<unknown>) => async () => {
      await client.query('BEGIN');
      await fn();
      await client.query('ROLLBACK');
    };
    out[`lockEmails (${batch.length})`] = await median(inTx(() => lockEmails(client, batch)));
    if (withDays)
      out['the lock before amongIds'] = await median(
        inTx(() =>
          client.query(
            `SELECT e.tenant_id, e.id, e.state, e.version FROM email_logs e
               JOIN unnest($1::text[], $2::text[]) AS u(t, i) ON e.tenant_id = u.t AND e.id = u.i
              ORDER BY e.tenant_id, e.id FOR UPDATE OF e`,
            [batch.map((b) => b.tenantId), batch.map((b) => b.emailId)],
          ),
        ),
      );
  } finally {
    client.release();
  }
  const hundred = batch.slice(0, 100);
  const events = hundred.map((b, n) => ({
    id: `ev_${n}`,
    type: 'email.delivered',
    tenantId: b.tenantId,
    emailId: b.emailId,
    occurredAt: new Date().toISOString(),
  }));
  out['emailViewsAt (100)'] = await median(() => emailViewsAt(pool, events as never));
  if (withDays) {
    await pool.query('CREATE TABLE claimed (tenant_id text, email_id text, request_body text)');
    await pool.query('INSERT INTO claimed SELECT t, i, NULL FROM unnest($1::text[], $2::text[]) AS u(t, i)', [
      hundred.map((b) => b.tenantId),
      hundred.map((b) => b.emailId),
    ]);
    await pool.query('ANALYZE claimed');
    out["the claim's join it replaced"] = await median(() =>
      pool.query(
        `SELECT c.*, l.state FROM claimed c
           LEFT JOIN ${projectedEmailStateSql} l ON c.request_body IS NULL AND l.tenant_id = c.tenant_id AND l.id = c.email_id`,
      ),
    );
  }
  const q = { tenantId: 't7', cutoff: retentionCutoff(new Date(), PAST), limit: 50, filter: {}, page: 1 };
  // One connection, as the api's pool keeps them: its named statements are planned there.
  const reader = await pool.connect();
  try {
    out['logs page 1'] = await median(() => logsPage(reader, { ...q, cursor: null }));
    let cursor: LogsCursor | null = null;
    for (let i = 0; i < 10; i++) cursor = (await logsPage(reader, { ...q, cursor })).next;
    out['logs page after a cursor 500 in'] = await median(() => logsPage(reader, { ...q, cursor }));
    const { rows: plans } = await reader.query<{ name: string; generic_plans: string; custom_plans: string }>(
      'SELECT name, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name',
    );
    for (const p of plans)
      say(
        `${withDays ? '94 days' : 'none'}: ${p.name}: ${p.generic_plans} generic plans, ${p.custom_plans} custom`,
      );
  } finally {
    reader.release();
  }
  out.emailIsVisible = await median(() => emailIsVisible(pool, batch[7]!.tenantId, batch[7]!.emailId));
  return out;
}

const results: { days: Figures; none: Figures } = { days: {}, none: {} };
if (KIND === 'pglite') {
  for (const withDays of [true, false]) {
    const store = await createPostgres({ dataDir: tempDir('tern-log-ids-') });
    try {
      await fill(store.pool, withDays);
      results[withDays ? 'days' : 'none'] = await measure(store.pool, withDays);
    } finally {
      await store.close();
    }
  }
} else {
  const server = await startDedicatedPostgres();
  try {
    for (const withDays of [true, false]) {
      const db = await createNamedDatabase(server.url, withDays ? 'tern_log_days' : 'tern_log_none');
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      pool.on('error', () => {});
      try {
        await fill(pool, withDays);
        results[withDays ? 'days' : 'none'] = await measure(pool, withDays);
      } finally {
        await pool.end();
        await db.drop().catch(() => undefined);
      }
    }
  } finally {
    await server.stop('fast');
  }
}
say(`${PER_DAY} rows a day, ${PAST + 1} days; median of ${RUNS} round trips`);
for (const [what, ms] of Object.entries(results.days)) {
  const none = results.none[what];
  say(
    `${what}: ${f(ms)} with 94 days` +
      (none === undefined ? '' : `, ${f(none)} with none (all in the DEFAULT): ${(ms / none).toFixed(2)}×`),
  );
}
