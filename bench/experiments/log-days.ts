/**
 * Issue 45 item 4, as built (migration 0560): what the retention job's day maintenance costs on a
 * log that predates the partitions. On a Postgres server of its own: the migrated log's DEFAULT
 * filled with `LOGDAYS_ROWS` rows (ids of the older shape; 1 in 100 000 inside tomorrow's ids), then
 *
 *   1. `ensureLogDays` for the 3 days after today while a writer inserts one row every ~2 ms (ids
 *      of today, in the DEFAULT): its time, the rows moved, the writer's worst insert;
 *   2. one of those days filled with `LOGDAYS_DAY_ROWS` expired emails, then `dropExpiredLogDays`
 *      against the job's row-by-row `DELETE` of the same rows on a copy of that day: time and WAL.
 *
 *   npx tsx bench/experiments/log-days.ts
 */
import { DAY_MS } from '@tern/domain';
import { idTime } from '@tern/kernel';
import { dropExpiredLogDays, ensureLogDays, LOG_DAYS_AHEAD, logDay } from '@tern/read-models';
import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { startDedicatedPostgres } from '../../test/faults/servers.js';
import { createNamedDatabase } from '../../test/support/services.js';

const ROWS = Number(process.env.LOGDAYS_ROWS ?? 2_000_000);
const DAY_ROWS = Number(process.env.LOGDAYS_DAY_ROWS ?? 500_000);
const TENANTS = 1000;

const server = await startDedicatedPostgres({ settings: ['max_wal_size = 8GB', 'checkpoint_timeout = 1h'] });
const db = await createNamedDatabase(server.url, 'tern_log_days');
const pool = new pg.Pool({ connectionString: db.url, max: 4 });
pool.on('error', () => {});
const say = (s: string) => console.log(`[log-days] ${s}`);
const ms = (x: number) => `${x.toFixed(1)} ms`;
const wal = async () =>
  (await pool.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
const walSince = async (from: string) =>
  Number(
    (await pool.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS b', [from]))
      .rows[0]!.b,
  );
try {
  await migratePostgres(pool);
  const now = Date.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  // The DEFAULT: older-shape ids (24 hex characters), 1 in 100 000 of tomorrow's shape (a stray to move).
  await pool.query(
    `INSERT INTO email_logs (tenant_id, id, status, created_at, state, to_email, subject)
     SELECT 't' || (g % ${TENANTS}),
            CASE WHEN g % 100000 = 0 THEN $1 || lpad(g::text, 16, '0') ELSE 'em_' || substr(md5(g::text), 1, 24) END,
            'DELIVERED', now() - (g % 86400) * interval '1 second', jsonb_build_object('pad', repeat('x', 400)),
            'user' || g || '@example.com', 'Subject ' || g
       FROM generate_series(1, $2::int) g`,
    [`em_${idTime(today + DAY_MS)}`, ROWS],
  );
  await pool.query('VACUUM ANALYZE email_logs');
  say(`DEFAULT filled: ${ROWS} rows`);

  // 1. The days ahead, a writer going on.
  let worst = 0;
  let writes = 0;
  let writing = true;
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      const s = performance.now();
      await pool.query(
        `INSERT INTO email_logs (tenant_id, id, status, created_at, state) VALUES ('w', $1, 'SENT', now(), '{}')`,
        [`em_${idTime(Date.now())}w${String(n).padStart(15, '0')}`],
      );
      worst = Math.max(worst, performance.now() - s);
      writes++;
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  worst = 0;
  writes = 0;
  const s1 = performance.now();
  const made = await ensureLogDays(pool, new Date(today + DAY_MS), LOG_DAYS_AHEAD);
  const took1 = performance.now() - s1;
  writing = false;
  await writer;
  say(
    `ensureLogDays(${LOG_DAYS_AHEAD} days) over a DEFAULT of ${ROWS} rows: ${ms(took1)}; made ${made.made.length}, ` +
      `moved ${made.moved}; the writer's worst insert ${ms(worst)} over ${writes} inserts`,
  );

  // 2. A day of expired emails: dropped whole, against the job's DELETE of a copy of it.
  // The second day: the first holds the strays moved in above, queued today, not expired.
  const day = logDay(new Date(today + 2 * DAY_MS));
  const fill = (table: string) =>
    pool.query(
      `INSERT INTO ${table} (tenant_id, id, status, created_at, state, to_email, subject)
       SELECT 't' || (g % ${TENANTS}), $1 || 'd' || lpad(g::text, 15, '0'), 'DELIVERED',
              now() - interval '200 days', jsonb_build_object('pad', repeat('x', 400)),
              'user' || g || '@example.com', 'Subject ' || g
         FROM generate_series(1, $2::int) g`,
      [day.lo, DAY_ROWS],
    );
  await fill('email_logs');
  await pool.query('CREATE TABLE email_logs_copy (LIKE email_logs INCLUDING ALL)');
  await fill('email_logs_copy');
  await pool.query('VACUUM ANALYZE email_logs_copy');
  await pool.query(`VACUUM ANALYZE ${day.name}`);
  await pool.query('CHECKPOINT');
  let from = await wal();
  let s = performance.now();
  // The job's statement of migration 0560 (by key), a batch of 5 000 a tenant, on the copy.
  let deleted = 0;
  for (let t = 0; t < TENANTS; t++)
    for (;;) {
      const r = await pool.query(
        `DELETE FROM email_logs_copy d WHERE d.tenant_id = $1 AND d.id = ANY (ARRAY(
           SELECT e.id FROM email_logs_copy e WHERE e.tenant_id = $1 AND e.created_at < $2 LIMIT 5000))`,
        [`t${t}`, new Date(now - 90 * DAY_MS)],
      );
      deleted += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < 5000) break;
    }
  say(
    `the day's ${deleted} rows by the job's DELETE: ${ms(performance.now() - s)}, WAL ${(await walSince(from)) >> 10} kB`,
  );
  await pool.query('CHECKPOINT');
  from = await wal();
  s = performance.now();
  const gone = await dropExpiredLogDays(pool, new Date(today + 3 * DAY_MS), {
    cutoffOf: () => new Date(now - 90 * DAY_MS),
    sendNotFinal: () => 'false',
  });
  say(
    `dropExpiredLogDays: ${gone.dropped.join(', ')} (${gone.rows} rows): ${ms(performance.now() - s)}, ` +
      `WAL ${(await walSince(from)) >> 10} kB`,
  );
} finally {
  await pool.end();
  await db.drop().catch(() => undefined);
  await server.stop('fast');
}
