/**
 * Issue 45 item 4, the log partitioned by day at its steady state: what the statements that read
 * `email_logs` by a set of ids cost once it holds the default retention's days (90 past days and
 * 3 ahead), against the same rows in one unpartitioned table (the ceiling), on a Postgres server of
 * its own. `LOGIDS_PER_DAY` rows a day (default 20 000) over 100 tenants, then each statement
 * `LOGIDS_RUNS` times (default 30), the median wall time of a round trip:
 *
 *   - the projector's lock of a batch of the 500 newest emails (`lockEmails`): as built, and as it
 *     was before `amongIds` (the join on `unnest` alone);
 *   - the dispatcher's read of 100 emails' states: `emailViewsAt` as built, and the claim's join
 *     of `projectedEmailStateSql` it replaced.
 *
 *   npx tsx bench/experiments/log-days-ids.ts
 */
import { DAY_MS } from '@tern/domain';
import { idTime } from '@tern/kernel';
import { emailViewsAt, ensureLogDays, lockEmails, projectedEmailStateSql } from '@tern/read-models';
import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { startDedicatedPostgres } from '../../test/faults/servers.js';
import { createNamedDatabase } from '../../test/support/services.js';

const PER_DAY = Number(process.env.LOGIDS_PER_DAY ?? 20_000);
const RUNS = Number(process.env.LOGIDS_RUNS ?? 30);
const TENANTS = 100;
const PAST = 90;

const server = await startDedicatedPostgres();
const db = await createNamedDatabase(server.url, 'tern_log_ids');
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
pool.on('error', () => {});
const say = (s: string) => console.log(`[log-days-ids] ${s}`);

/** The median of `RUNS` round trips of `fn`, in ms. */
async function median(fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const s = performance.now();
    await fn();
    times.push(performance.now() - s);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

try {
  await migratePostgres(pool);
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const made = await ensureLogDays(pool, new Date(today - PAST * DAY_MS), PAST + 4);
  say(`${made.made.length} day partitions made`);
  const step = Math.floor(DAY_MS / PER_DAY);
  for (let d = -PAST; d <= 0; d++) {
    const t0 = today + d * DAY_MS;
    const n = d === 0 ? Math.min(PER_DAY, Math.floor((Date.now() - today) / step)) : PER_DAY;
    const ids = Array.from(
      { length: n },
      (_, k) => `em_${idTime(t0 + k * step)}${String(k).padStart(16, '0')}`,
    );
    await pool.query(
      `INSERT INTO email_logs (tenant_id, id, status, created_at, state, version, to_email, subject)
       SELECT 't' || (k % ${TENANTS}), i, 'DELIVERED', to_timestamp($2::bigint / 1000.0) + k * interval '1 ms' * $3,
              jsonb_build_object('queued', jsonb_build_object('tags', '[]'::jsonb)), 1, 'user' || k || '@example.com', 'Subject'
         FROM unnest($1::text[]) WITH ORDINALITY AS u(i, k)`,
      [ids, t0, step],
    );
  }
  await pool.query('CREATE TABLE email_logs_flat (LIKE email_logs INCLUDING ALL)');
  await pool.query('INSERT INTO email_logs_flat SELECT * FROM email_logs');
  await pool.query('VACUUM ANALYZE email_logs');
  await pool.query('VACUUM ANALYZE email_logs_flat');
  const { rows: count } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM email_logs');
  say(`${count[0]!.n} rows in ${PAST + 1} days (and the same in email_logs_flat)`);

  const recent = async (n: number) =>
    (
      await pool.query<{ tenant_id: string; id: string }>(
        'SELECT tenant_id, id FROM email_logs ORDER BY id DESC LIMIT $1',
        [n],
      )
    ).rows.map((r) => ({ tenantId: r.tenant_id, emailId: r.id }));
  const batch = await recent(500);
  const client = await pool.connect();
  try {
    const lockAs = (table: string, pruned: boolean) =>
      median(async () => {
        await client.query('BEGIN');
        await client.query(
          `SELECT e.tenant_id, e.id, e.state, e.version FROM ${table} e
             JOIN unnest($1::text[], $2::text[]) AS u(t, i) ON e.tenant_id = u.t AND e.id = u.i
            ${pruned ? 'WHERE e.id = ANY($2::text[])' : ''}
            ORDER BY e.tenant_id, e.id FOR UPDATE OF e`,
          [batch.map((b) => b.tenantId), batch.map((b) => b.emailId)],
        );
        await client.query('ROLLBACK');
      });
    const built = await median(async () => {
      await client.query('BEGIN');
      await lockEmails(client, batch);
      await client.query('ROLLBACK');
    });
    say(
      `lock of ${batch.length} emails (BEGIN … ROLLBACK): as built ${built.toFixed(2)} ms; before amongIds ` +
        `${(await lockAs('email_logs', false)).toFixed(2)} ms; one unpartitioned table ` +
        `${(await lockAs('email_logs_flat', false)).toFixed(2)} ms`,
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
  await pool.query('CREATE TABLE claimed (tenant_id text, email_id text, request_body text)');
  await pool.query('INSERT INTO claimed SELECT t, i, NULL FROM unnest($1::text[], $2::text[]) AS u(t, i)', [
    hundred.map((b) => b.tenantId),
    hundred.map((b) => b.emailId),
  ]);
  await pool.query('ANALYZE claimed');
  const joined = (relation: string) =>
    median(() =>
      pool.query(
        `SELECT c.*, l.state FROM claimed c
           LEFT JOIN ${relation} l ON c.request_body IS NULL AND l.tenant_id = c.tenant_id AND l.id = c.email_id`,
      ),
    );
  say(
    `states of 100 claimed emails: emailViewsAt ${(await median(() => emailViewsAt(pool, events as never))).toFixed(2)} ms; ` +
      `the claim's join before ${(await joined(projectedEmailStateSql)).toFixed(2)} ms; ` +
      `the same join on one unpartitioned table ${(await joined(projectedEmailStateSql.replace('email_logs e', 'email_logs_flat e'))).toFixed(2)} ms`,
  );
} finally {
  await pool.end();
  await db.drop().catch(() => undefined);
  await server.stop('fast');
}
