import { readFile, rm, writeFile } from 'node:fs/promises';
import { createPoller } from '@tern/jobs';
import { type Logger, silentLogger } from '@tern/kernel';
import type pg from 'pg';
import { z } from 'zod';

/**
 * Postgres's autovacuum for the embedded database. A server runs it in background workers of its
 * own; PGlite runs no background process at all (its `autovacuum` setting reads `on`, and nothing
 * acts on it), so without this the embedded default would never reclaim a dead row nor gather a
 * table's statistics: every plan made on guesses (a nested loop over a table planned as empty),
 * every update and every retention delete leaving its dead rows in the tables and their indexes for
 * good, and no freeze before the transaction counter wraps.
 *
 * The rule is the launcher's, read from the database's own settings (Postgres's defaults unless
 * configured): a table is vacuumed when its dead rows exceed `autovacuum_vacuum_threshold` +
 * `autovacuum_vacuum_scale_factor` × its rows (50 + 20 %; at most `autovacuum_vacuum_max_threshold`,
 * 100 M, on Postgres 18: PGlite's), when the rows inserted since its last
 * vacuum exceed `autovacuum_vacuum_insert_threshold` + `autovacuum_vacuum_insert_scale_factor` × its
 * rows (1 000 + 20 %: an append-only table gets its visibility map set), or when its oldest
 * unfrozen transaction is older than `autovacuum_freeze_max_age`; it is analysed when the rows
 * changed since its last analyze exceed `autovacuum_analyze_threshold` +
 * `autovacuum_analyze_scale_factor` × its rows (50 + 10 %). Like the launcher it skips partitioned
 * parents (their partitions are tables of their own) and a table whose storage parameters say
 * `autovacuum_enabled = false`.
 *
 * On PGlite a statement runs on the event loop's thread, so a vacuum pauses the process for as long
 * as it takes (docs/deploy.md: "The embedded database's upkeep" has the figures); tables go one at a
 * time, each its own statement, so other queries interleave between them.
 */

/** Every `naptimeMs` (Postgres's `autovacuum_naptime`, 1 min) the tables are looked at. */
export const AUTOVACUUM_NAPTIME_MS = 60_000;

/** A table the rule picked, and what it is due. */
export interface AutovacuumDue {
  /** Schema-qualified and quoted, ready for a statement. */
  table: string;
  vacuum: boolean;
  analyze: boolean;
}

export interface AutovacuumRun {
  vacuumed: string[];
  /** Analysed only (a vacuumed table is analysed with it when it is due both). */
  analyzed: string[];
  /** Gone between the look and its turn (a dropped day partition). */
  gone: string[];
  /** Refused (the next pass tries them again); the others go on. */
  failed: { table: string; code: string | undefined }[];
  /** The pass, from its look to its last statement's answer (others' statements run between). */
  ms: number;
  /** The longest statement, from asking to answer (on PGlite its wait for the one connection too). */
  longest?: { table: string; ms: number };
}

/** Per table, what the rule counts: dead rows, rows inserted since its vacuum, changed since its analyze. */
const tableCountsSchema = z.object({ dead: z.number(), inserted: z.number(), changed: z.number() });
export type TableCounts = z.infer<typeof tableCountsSchema>;
const carriedSchema = z.record(z.string(), tableCountsSchema);

/**
 * Counts a close would lose, by table: PGlite keeps no statistics across a close (a server keeps
 * them across a clean shutdown, in `pg_stat/`), so the store saves them at its close and hands them
 * to the next open, which adds them to what its session counts until the table's next vacuum or
 * analyze. Lost on a crash, as a server's are.
 */
export type CarriedCounts = Record<string, TableCounts>;

const RULE_SETTINGS = [
  'autovacuum_vacuum_threshold',
  'autovacuum_vacuum_scale_factor',
  'autovacuum_vacuum_max_threshold',
  'autovacuum_vacuum_insert_threshold',
  'autovacuum_vacuum_insert_scale_factor',
  'autovacuum_freeze_max_age',
  'autovacuum_analyze_threshold',
  'autovacuum_analyze_scale_factor',
] as const;
type RuleSettings = Record<(typeof RULE_SETTINGS)[number], number>;

/** The tables the launcher looks at, with their counts, rows and the age of their oldest unfrozen transaction. */
const TABLES_SQL = `
  SELECT format('%I.%I', n.nspname, c.relname) AS "table",
         s.n_dead_tup::float8 AS dead, s.n_ins_since_vacuum::float8 AS inserted,
         s.n_mod_since_analyze::float8 AS changed, greatest(c.reltuples, 0)::float8 AS rows,
         age(c.relfrozenxid)::float8 AS "xidAge"
    FROM pg_stat_user_tables s
    JOIN pg_class c ON c.oid = s.relid
    JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'm')
     AND NOT coalesce('autovacuum_enabled=false' = ANY (c.reloptions), false)
   ORDER BY n.nspname, c.relname`;

interface TableRow extends TableCounts {
  table: string;
  rows: number;
  xidAge: number;
}

/** The tables with their counts (`carried` added). The session's own counts are made visible first. */
async function tablesOf(pool: pg.Pool, carried: CarriedCounts): Promise<TableRow[]> {
  // Counts are published when a session goes idle, at most once a second; PGlite's one session is
  // this one, so its counts since the last publication are forced out (a server's other sessions
  // publish their own, as they do for the server's launcher).
  await pool.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await pool.query<TableRow>(TABLES_SQL);
  return rows.map((r) => {
    const c = carried[r.table];
    return c
      ? { ...r, dead: r.dead + c.dead, inserted: r.inserted + c.inserted, changed: r.changed + c.changed }
      : r;
  });
}

async function ruleSettings(pool: pg.Pool): Promise<RuleSettings> {
  const { rows } = await pool.query<{ name: string; value: number }>(
    'SELECT name, setting::float8 AS value FROM pg_settings WHERE name = ANY($1)',
    [RULE_SETTINGS],
  );
  const of = new Map(rows.map((r) => [r.name, r.value]));
  // Absent (before Postgres 18) or -1: no cap.
  const max = of.get('autovacuum_vacuum_max_threshold') ?? -1;
  return {
    ...(Object.fromEntries(RULE_SETTINGS.map((n) => [n, of.get(n) ?? Number.NaN])) as RuleSettings),
    autovacuum_vacuum_max_threshold: max >= 0 ? max : Number.POSITIVE_INFINITY,
  };
}

/** The launcher's rule for one table. */
function dueOf(t: TableRow, s: RuleSettings): AutovacuumDue {
  const deadAt = Math.min(
    s.autovacuum_vacuum_threshold + s.autovacuum_vacuum_scale_factor * t.rows,
    s.autovacuum_vacuum_max_threshold,
  );
  const insertAt = s.autovacuum_vacuum_insert_threshold + s.autovacuum_vacuum_insert_scale_factor * t.rows;
  return {
    table: t.table,
    vacuum:
      t.dead > deadAt ||
      (s.autovacuum_vacuum_insert_threshold >= 0 && t.inserted > insertAt) ||
      t.xidAge > s.autovacuum_freeze_max_age,
    analyze: t.changed > s.autovacuum_analyze_threshold + s.autovacuum_analyze_scale_factor * t.rows,
  };
}

/** What the rule picks now (`carried`: counts of before the last close, see `CarriedCounts`). */
export async function autovacuumDue(pool: pg.Pool, carried: CarriedCounts = {}): Promise<AutovacuumDue[]> {
  const settings = await ruleSettings(pool);
  return (await tablesOf(pool, carried)).map((t) => dueOf(t, settings)).filter((d) => d.vacuum || d.analyze);
}

/**
 * One pass of the rule: each table due, one statement each. `carried` loses what a statement
 * settled (a vacuum its dead and inserted rows, an analyze its changed ones).
 */
export async function runAutovacuum(pool: pg.Pool, carried: CarriedCounts = {}): Promise<AutovacuumRun> {
  const started = performance.now();
  const run: AutovacuumRun = { vacuumed: [], analyzed: [], gone: [], failed: [], ms: 0 };
  for (const due of await autovacuumDue(pool, carried)) {
    const statement = due.vacuum ? (due.analyze ? 'VACUUM (ANALYZE)' : 'VACUUM') : 'ANALYZE';
    const at = performance.now();
    try {
      await pool.query(`${statement} ${due.table}`);
      const ms = performance.now() - at;
      if (ms > (run.longest?.ms ?? -1)) run.longest = { table: due.table, ms };
    } catch (err) {
      const code = (err as { code?: string }).code;
      // 42P01 undefined_table: dropped since the look (the retention job drops day partitions).
      if (code === '42P01') {
        run.gone.push(due.table);
        delete carried[due.table];
      } else run.failed.push({ table: due.table, code });
      continue;
    }
    const c = carried[due.table];
    if (c) {
      if (due.vacuum) c.dead = c.inserted = 0;
      if (due.analyze) c.changed = 0;
    }
    (due.vacuum ? run.vacuumed : run.analyzed).push(due.table);
  }
  run.ms = performance.now() - started;
  return run;
}

export interface Autovacuum {
  runOnce(): Promise<AutovacuumRun>;
  /** Every table's counts now, what was carried in included: what a close saves for the next open. */
  counts(): Promise<CarriedCounts>;
  /** Runs every `naptimeMs`, the first one `naptimeMs` after the start. */
  start(): void;
  /** Cancels the schedule and waits for a pass in progress. */
  stop(): Promise<void>;
}

export interface AutovacuumOptions {
  pool: pg.Pool;
  naptimeMs?: number;
  logger?: Logger;
  /** Counts of before the last close (`counts()` then). */
  carried?: CarriedCounts;
}

export function createAutovacuum(opts: AutovacuumOptions): Autovacuum {
  const naptimeMs = opts.naptimeMs ?? AUTOVACUUM_NAPTIME_MS;
  const logger = opts.logger ?? silentLogger;
  const carried: CarriedCounts = structuredClone(opts.carried ?? {});
  const runOnce = async () => {
    const run = await runAutovacuum(opts.pool, carried);
    if (run.vacuumed.length + run.analyzed.length > 0)
      logger.info(
        {
          vacuumed: run.vacuumed,
          analyzed: run.analyzed,
          ms: Math.round(run.ms),
          longest: run.longest && { table: run.longest.table, ms: Math.round(run.longest.ms) },
        },
        'autovacuum: tables vacuumed and analysed',
      );
    if (run.failed.length > 0)
      logger.warn({ failed: run.failed }, 'autovacuum: tables refused; the next pass tries again');
    return run;
  };
  const poller = createPoller({
    name: 'autovacuum',
    intervalMs: naptimeMs,
    firstRunMs: naptimeMs,
    run: runOnce,
    onError: (err) => {
      const { code, message } = err as { code?: string; message?: string };
      logger.warn({ code, message }, 'autovacuum: a pass failed; the next one tries again');
    },
  });
  const counts = async () =>
    Object.fromEntries(
      (await tablesOf(opts.pool, carried)).map((t) => [
        t.table,
        { dead: t.dead, inserted: t.inserted, changed: t.changed },
      ]),
    );
  return { runOnce, counts, start: () => poller.start(), stop: () => poller.stop() };
}

/**
 * The counts a close saved in `file` (`saveCarriedCounts`), taken: the file is removed, so a crash
 * before the next close carries nothing (as a server's crash resets its counts). None when absent
 * or unreadable.
 */
export async function takeCarriedCounts(file: string, logger: Logger = silentLogger): Promise<CarriedCounts> {
  let saved: unknown;
  try {
    saved = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    // Not there (or not readable): nothing carried. Not JSON: taken and refused below.
    if (!(err instanceof SyntaxError)) return {};
  }
  await rm(file, { force: true });
  const parsed = carriedSchema.safeParse(saved);
  if (!parsed.success) logger.warn({ file }, 'autovacuum: saved counts unreadable; starting from none');
  return parsed.success ? parsed.data : {};
}

/** Saves `autovacuum`'s counts for the next open; a failure is logged and loses only the counts. */
export async function saveCarriedCounts(file: string, autovacuum: Autovacuum, logger: Logger = silentLogger) {
  try {
    await writeFile(file, JSON.stringify(await autovacuum.counts()));
  } catch (err) {
    logger.warn(
      { file, message: (err as Error).message },
      'autovacuum: counts not saved; the next open starts from none',
    );
  }
}
