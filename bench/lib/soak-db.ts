/**
 * The soak bench's database side (issue 32, item 6): the read tenant's entries filled with SQL,
 * what Postgres's statistics say about the projection's tables (dead rows) and its buffer cache,
 * and the autovacuum launcher's rule run by hand on the bench's database.
 */
import { runAutovacuum } from '@tern/stores';
import type pg from 'pg';
import { round } from './stats.js';

/** The projection's tables whose dead rows are followed. */
const TABLES = ['email_logs', 'email_events', 'processed_events', 'analytics_outbox', 'email_log_counts'];
const DAY_MS = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function deadRows(pool: pg.Pool): Promise<Record<string, { live: number; dead: number }>> {
  const { rows } = await pool.query<{ relname: string; live: string; dead: string }>(
    'SELECT relname, n_live_tup AS live, n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname = ANY($1)',
    [TABLES],
  );
  return Object.fromEntries(rows.map((r) => [r.relname, { live: Number(r.live), dead: Number(r.dead) }]));
}

export interface Blocks {
  hit: number;
  read: number;
}

/** The database's block reads so far: from the buffer cache (`hit`) or not (`read`). */
export async function blocks(pool: pg.Pool): Promise<Blocks> {
  const { rows } = await pool.query<{ hit: string; read: string }>(
    'SELECT blks_hit AS hit, blks_read AS read FROM pg_stat_database WHERE datname = current_database()',
  );
  return { hit: Number(rows[0]!.hit), read: Number(rows[0]!.read) };
}

/** The share (%) of block reads between `a` and `b` served from the buffer cache. */
export const hitShare = (a: Blocks, b: Blocks): number =>
  round((100 * (b.hit - a.hit)) / Math.max(1, b.hit - a.hit + b.read - a.read), 2);

export interface AutovacuumLog {
  vacuums: number;
  analyzes: number;
  ms: number;
  /** What was run on each table, in order. */
  tables: Record<string, string[]>;
}

/**
 * Postgres's autovacuum, run on this database (the server's launcher is off) every `naptimeS`: the
 * embedded database's own (`runAutovacuum` of @tern/stores, the launcher's rule read from the
 * server's settings: VACUUM past 50 + 20 % dead rows or 1 000 + 20 % inserted, ANALYZE past 50 + 10 %
 * changed). Returns the stop function.
 */
export function emulateAutovacuum(pool: pg.Pool, naptimeS: number, log: AutovacuumLog) {
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      await sleep(naptimeS * 1000);
      if (stopped) break;
      const run = await runAutovacuum(pool);
      log.ms += run.ms;
      log.vacuums += run.vacuumed.length;
      log.analyzes += run.analyzed.length;
      for (const [tables, what] of [
        [run.vacuumed, 'vacuum'],
        [run.analyzed, 'analyze'],
      ] as const)
        for (const t of tables) {
          const name = t.replace(/^public\./, '');
          log.tables[name] = [...(log.tables[name] ?? []), what];
        }
    }
  })();
  return async () => {
    stopped = true;
    await done;
  };
}

/** `entries` log entries of `tenant` over the last 30 days and their daily counts, then analysed. */
export async function fillSoakTenant(pool: pg.Pool, tenant: string, entries: number): Promise<void> {
  const now = Date.now();
  const spacingMs = (30 * DAY_MS) / entries;
  for (let from = 0; from < entries; from += 100_000) {
    await pool.query(
      `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, provider, message_id, template_id,
                               tags, created_at, state, version)
       SELECT $1, 'fill_' || g, 'user' || (g % 50000) || '@example.com', 'Your receipt',
              (ARRAY['DELIVERED','DELIVERED','DELIVERED','SENT','BOUNCED','FAILED','QUEUED','DELIVERED'])[1 + g % 8],
              'ses', 'msg-' || g, 'tpl_' || (g % 20), '["receipt"]'::jsonb,
              to_timestamp(($2::bigint - 60000 - g * $3::float8) / 1000.0), '{}'::jsonb, 1
         FROM generate_series($4::bigint, $5::bigint) AS g`,
      [tenant, now, spacingMs, from + 1, Math.min(from + 100_000, entries)],
    );
  }
  await pool.query(
    `INSERT INTO email_log_counts (tenant_id, project_id, day, status, n)
     SELECT tenant_id, '', (created_at AT TIME ZONE 'UTC')::date, status, count(*) FROM email_logs GROUP BY 1, 3, 4`,
  );
  await pool.query('VACUUM ANALYZE email_logs');
  await pool.query('ANALYZE email_log_counts');
}
