import { DAY_MS } from '@tern/domain';
import { idTime, withTransaction } from '@tern/kernel';
import { PARTITION_WINDOW_SUFFIX } from '@tern/stores';
import type pg from 'pg';
import { tenantsWith } from './loose-scan.js';

/**
 * The log's day partitions (migration 0560, issue 45 item 4): `email_logs` is partitioned by
 * RANGE (id), a day being the ids made in it (`em_` + `idTime`, in byte order), with a DEFAULT
 * partition for every id of no day (made before the time prefix or posted from outside, and the
 * days before the migration). The retention job makes days ahead (`ensureLogDays`) and drops a day
 * once every email in it has expired (`dropExpiredLogDays`): one `DROP TABLE` where the rows
 * would each be deleted. docs/deploy.md, "A log partitioned by day", has the measured figures.
 */

// Any constant distinct from Tern's other advisory locks (migrations 7_204_311_955, retention …956).
export const LOG_DAYS_LOCK_KEY = 7_204_311_957;
/**
 * The DEFAULT's CHECK that keeps the ids of the days being made out of it while they are made,
 * named after the span it keeps out (so a run knows its own). An insert it refuses is
 * "unavailable", not bad data (`classifyStoreError`: the `_partition_window` suffix): retried,
 * never dead-lettered.
 */
export const LOG_DAYS_WINDOW = new RegExp(
  `^email_logs_w_[0-9a-z]{10}_[0-9a-z]{10}${PARTITION_WINDOW_SUFFIX}$`,
);
const windowName = (lo: string, hi: string) =>
  `email_logs_w_${lo.slice(3)}_${hi.slice(3)}${PARTITION_WINDOW_SUFFIX}`.toLowerCase();
const DEFAULT_PARTITION = 'email_logs_default';
const NAME = /^email_logs_d(\d{4})(\d{2})(\d{2})$/;
/**
 * Days of the log the retention job makes ahead, from the day after today (its `logDaysAhead`
 * default): a deployed log holds the retention's past days, today and these.
 */
export const LOG_DAYS_AHEAD = 3;
/** Each DDL statement waits this long for its lock, then fails (the next run tries again). */
const LOCK_TIMEOUT = '3s';

export interface LogDay {
  /** The partition's table, `email_logs_dYYYYMMDD`. */
  name: string;
  /** Midnight UTC that starts the day. */
  day: Date;
  /** The day's first id bound (inclusive) and the next day's (exclusive). */
  lo: string;
  hi: string;
}

/**
 * A statement's condition that the log row `alias` is one of the ids `param` (a `text[]`
 * parameter), written beside the join that already says so: it lets Postgres prune to the days of
 * those ids while it plans. A join on ids it learns only while it runs (an `unnest` of the batch)
 * cannot be pruned then: it plans every day of the log and, at a retention of 90 days, reads them
 * all (a hash of every row) where one day holds the batch (docs/deploy.md, "A log partitioned by
 * day"). Every statement of this owner that reads the log by a set of ids carries it (another
 * owner's statement that reads the log by ids of its own looks each up by key instead: `mailStats`).
 */
export function amongIds(alias: string, param: string): string {
  return `${alias}.id = ANY(${param}::text[])`;
}

/** The day partition of the UTC day holding `at`. */
export function logDay(at: Date): LogDay {
  const start = Math.floor(at.getTime() / DAY_MS) * DAY_MS;
  const day = new Date(start);
  const name = `email_logs_d${day.toISOString().slice(0, 10).replaceAll('-', '')}`;
  return { name, day, lo: `em_${idTime(start)}`, hi: `em_${idTime(start + DAY_MS)}` };
}

/** A bound as an SQL literal: DDL takes no parameters, and a bound is `em_` + ten Crockford characters. */
function literal(bound: string): string {
  if (!/^em_[0-9A-Z]{10}$/.test(bound)) throw new Error(`not a day bound: ${bound}`);
  return `'${bound}'`;
}

/** The day partitions that exist, oldest first. */
export async function logDays(client: pg.ClientBase | pg.Pool): Promise<LogDay[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'email_logs'::regclass`,
  );
  return rows
    .map((r) => NAME.exec(r.name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => logDay(new Date(`${m[1]}-${m[2]}-${m[3]}T00:00:00Z`)))
    .sort((a, b) => a.day.getTime() - b.day.getTime());
}

async function locked(client: pg.ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
    LOG_DAYS_LOCK_KEY,
  ]);
  if (rows[0]?.locked) await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
  return rows[0]?.locked === true;
}

/**
 * Makes the partitions of the `count` UTC days from the one holding `from` that do not exist yet;
 * answers their names and the rows moved into them from the DEFAULT. Without a long lock whatever
 * the DEFAULT holds (measured on 5 M rows: 8–16 ms of ACCESS EXCLUSIVE instead of a 2–3 s scan under
 * it): a `NOT VALID` CHECK keeps the days' ids out of the DEFAULT (its own short transaction), then
 * one transaction moves the DEFAULT's rows of those days aside (any there: an id of the old shape
 * that happens to fall in a day, or rows of a day made late), `VALIDATE`s the CHECK (a scan under
 * SHARE UPDATE EXCLUSIVE: writes go on), makes each day (Postgres skips its scan of the DEFAULT,
 * which the CHECK proves), puts the moved rows back through the parent and drops the CHECK. A
 * reader sees the moved rows all along. While the CHECK stands, a write of an id in those days
 * to the DEFAULT is refused as unavailable (retried). Another instance doing it: nothing done.
 */
export async function ensureLogDays(
  pool: pg.Pool,
  from: Date,
  count: number,
): Promise<{ made: string[]; moved: number }> {
  const wanted = Array.from({ length: count }, (_, i) => logDay(new Date(from.getTime() + i * DAY_MS)));
  const todo = async (client: pg.ClientBase) => {
    const have = new Set((await logDays(client)).map((d) => d.name));
    return wanted.filter((d) => !have.has(d.name));
  };
  const window = { name: '', lo: '', hi: '' };
  let settled = false;
  try {
    const first = await withTransaction(pool, async (client) => {
      if (!(await locked(client))) return [];
      const missing = await todo(client);
      if (missing.length === 0) return [];
      Object.assign(window, { lo: missing[0]!.lo, hi: missing.at(-1)!.hi });
      window.name = windowName(window.lo, window.hi);
      // A window left by a run that stopped between its two transactions goes first (`IF EXISTS`:
      // a run that gave way drops its own window in its `finally`, outside the lock, and may do
      // so between this listing and this drop).
      for (const old of await windows(client))
        await client.query(`ALTER TABLE ${DEFAULT_PARTITION} DROP CONSTRAINT IF EXISTS ${old}`);
      await client.query(
        `ALTER TABLE ${DEFAULT_PARTITION} ADD CONSTRAINT ${window.name}
           CHECK (id < ${literal(window.lo)} OR id >= ${literal(window.hi)}) NOT VALID`,
      );
      return missing;
    });
    if (first.length === 0) return { made: [], moved: 0 };
    const made = await withTransaction(pool, async (client) => {
      if (!(await locked(client))) return { made: [], moved: 0 };
      // Another run may have made them meanwhile, or replaced this window with its own.
      const missing = await todo(client);
      if (missing.length === 0 || !(await windows(client)).includes(window.name))
        return { made: [], moved: 0 };
      const span = missing.filter((d) => d.lo >= window.lo && d.hi <= window.hi);
      await client.query('CREATE TEMP TABLE email_logs_moving (LIKE email_logs) ON COMMIT DROP');
      const moved = await client.query(
        `WITH m AS (DELETE FROM ${DEFAULT_PARTITION}
                     WHERE id >= ${literal(window.lo)} AND id < ${literal(window.hi)} RETURNING *)
         INSERT INTO email_logs_moving SELECT * FROM m`,
      );
      await client.query(`ALTER TABLE ${DEFAULT_PARTITION} VALIDATE CONSTRAINT ${window.name}`);
      for (const d of span)
        await client.query(
          `CREATE TABLE ${d.name} PARTITION OF email_logs FOR VALUES FROM (${literal(d.lo)}) TO (${literal(d.hi)})`,
        );
      await client.query('INSERT INTO email_logs SELECT * FROM email_logs_moving');
      await client.query(`ALTER TABLE ${DEFAULT_PARTITION} DROP CONSTRAINT ${window.name}`);
      return { made: span.map((d) => d.name), moved: moved.rowCount ?? 0 };
    });
    settled = made.made.length > 0;
    return made;
  } finally {
    // A run that failed or gave way must not leave its CHECK refusing those ids to the DEFAULT
    // (bounded like every step: a lock not had in time leaves it to the next run's first step).
    if (!settled && window.name !== '')
      await withTransaction(pool, async (client) => {
        await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        await client.query(`ALTER TABLE ${DEFAULT_PARTITION} DROP CONSTRAINT IF EXISTS ${window.name}`);
      }).catch(() => undefined);
  }
}

/** The windows standing on the DEFAULT. */
async function windows(client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT conname AS name FROM pg_constraint
      WHERE conrelid = '${DEFAULT_PARTITION}'::regclass AND conname LIKE '%${PARTITION_WINDOW_SUFFIX}'`,
  );
  return rows.map((r) => r.name).filter((n) => LOG_DAYS_WINDOW.test(n));
}

export interface LogDayExpiry {
  /** The tenant's retention cut-off: its emails queued before it have expired. */
  cutoffOf(tenantId: string): Date;
  /** SQL true while the send of the email (`alias`.`id`) is not final (packages/sending). */
  sendNotFinal(alias: string, id: string): string;
}

/**
 * Drops each day partition, of the days that ended before `now`, whose every email has expired:
 * queued before its tenant's cut-off (a tenant's newest by `created_at`, one index probe per tenant
 * of the day), none not queued yet, none whose send is not final. The check and the drop are one
 * transaction holding the day in SHARE mode (no write lands between them). The emails' rows in the
 * content tables are left to the retention job's sweep of rows whose log row is gone. Answers the
 * days dropped and the log rows they held.
 */
export async function dropExpiredLogDays(
  pool: pg.Pool,
  now: Date,
  expiry: LogDayExpiry,
): Promise<{ dropped: string[]; rows: number }> {
  const done = { dropped: [] as string[], rows: 0 };
  const ended = (await logDays(pool)).filter((d) => d.day.getTime() + DAY_MS <= now.getTime());
  for (const d of ended) {
    const rows = await withTransaction(pool, async (client) => {
      if (!(await locked(client))) return null;
      await client.query(`LOCK TABLE ${d.name} IN SHARE MODE`);
      const newest = await client.query<{ tenant_id: string; newest: Date | null }>(
        `SELECT t.tenant_id,
                (SELECT max(x.created_at) FROM ${d.name} x WHERE x.tenant_id = t.tenant_id) AS newest
           FROM (${tenantsWith(d.name, 'true')}) t`,
      );
      const kept = newest.rows.some((r) => r.newest === null || r.newest >= expiry.cutoffOf(r.tenant_id));
      if (kept) return null;
      const { rows: held } = await client.query<{ n: number; blocked: boolean }>(
        `SELECT (SELECT count(*) FROM ${d.name})::int AS n,
                EXISTS (SELECT 1 FROM ${d.name} e
                         WHERE e.created_at IS NULL OR ${expiry.sendNotFinal('e', 'id')}) AS blocked`,
      );
      if (held[0]?.blocked !== false) return null;
      await client.query(`DROP TABLE ${d.name}`);
      return held[0].n;
    });
    if (rows === null) continue;
    done.dropped.push(d.name);
    done.rows += rows;
  }
  return done;
}
