/**
 * What the pgwork bench reads from Postgres to count the work of a phase (issue 45, item 2):
 * statements (`pg_stat_statements` when the server preloads it; else only the client-side count),
 * rows written and HOT updates (`pg_stat_user_tables`), and WAL bytes (`pg_current_wal_lsn()`; by
 * relation through `pg_walinspect`).
 * The client-side count wraps `pg.Client.prototype.query` in the bench process only: every
 * statement of the app's pools is counted by kind; the bench's own polls run on an observer pool
 * whose clients are marked and not counted.
 */
import pg from 'pg';
import { type Figure, figureMaker } from './report.js';
import { statementLabel } from './spans.js';
import { round } from './stats.js';

/** Per-statement-kind counts of the app's queries (client side), and the marker of observer clients. */
const OBSERVER = Symbol('pgwork-observer');
const clientCounts = new Map<string, number>();
let wrapped = false;

/** Counts every query sent by a client not marked as the observer's. Idempotent. */
export function countClientStatements(): void {
  if (wrapped) return;
  wrapped = true;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client & { [OBSERVER]?: boolean }, ...args: unknown[]) {
    if (this[OBSERVER] !== true) {
      const first = args[0];
      const text =
        typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '?');
      const label = statementLabel(text);
      clientCounts.set(label, (clientCounts.get(label) ?? 0) + 1);
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
}

/** A pool whose statements are not counted (the bench's polls and snapshots). */
export function observerPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('connect', (client) => {
    (client as pg.PoolClient & { [OBSERVER]?: boolean })[OBSERVER] = true;
  });
  pool.on('error', () => {});
  return pool;
}

/**
 * Runs `fn` on a connection of its own, not counted, closed at the end: its backend exits and so
 * flushes its table counters before the next snapshot (a pooled one may hold them for 10 s).
 */
export async function onOwnConnection(url: string, fn: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  (client as pg.Client & { [OBSERVER]?: boolean })[OBSERVER] = true;
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
  }
  await new Promise((r) => setTimeout(r, 500));
}

export function takeClientCounts(): Map<string, number> {
  const copy = new Map(clientCounts);
  clientCounts.clear();
  return copy;
}

export interface TableStats {
  ins: number;
  upd: number;
  hot: number;
  del: number;
}

export interface Snapshot {
  walLsn: string;
  tables: Map<string, TableStats>;
}

/** The WAL position and every table's write counters (read on the observer pool). */
export async function snapshot(observer: pg.Pool): Promise<Snapshot> {
  const wal = await observer.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  const { rows } = await observer.query<{
    relname: string;
    ins: string;
    upd: string;
    hot: string;
    del: string;
  }>(
    `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del
       FROM pg_stat_user_tables`,
  );
  const tables = new Map<string, TableStats>();
  for (const r of rows)
    tables.set(r.relname, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) });
  return { walLsn: wal.rows[0]!.lsn, tables };
}

/** Rows written between two snapshots, per table (tables with none left out), most first. */
export function tableDeltas(a: Snapshot, b: Snapshot): [string, TableStats][] {
  const out: [string, TableStats][] = [];
  for (const [name, after] of b.tables) {
    const before = a.tables.get(name) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const d = {
      ins: after.ins - before.ins,
      upd: after.upd - before.upd,
      hot: after.hot - before.hot,
      del: after.del - before.del,
    };
    if (d.ins + d.upd + d.del > 0) out.push([name, d]);
  }
  return out.sort((x, y) => y[1].ins + y[1].upd + y[1].del - (x[1].ins + x[1].upd + x[1].del));
}

export async function walBytes(observer: pg.Pool, from: string, to: string): Promise<number> {
  const { rows } = await observer.query<{ n: string }>(
    'SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn) AS n',
    [from, to],
  );
  return Number(rows[0]!.n);
}

/** WAL written for one relation (a table, an index, a TOAST table) between two positions. */
export interface RelationWal {
  relation: string;
  bytes: number;
  /** Of which full-page images. */
  fpiBytes: number;
  records: number;
}

/**
 * The WAL between two positions by the relation each record's first block belongs to
 * (`pg_walinspect`, in Postgres's contrib; superuser), most first; records with no block (commits,
 * running transactions) under `(no relation)`. Empty when it cannot be read (no extension, or a
 * role that may not read the WAL: a shared server).
 */
export async function walByRelation(observer: pg.Pool, from: string, to: string): Promise<RelationWal[]> {
  try {
    await observer.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const { rows } = await observer.query<{ relation: string; bytes: string; fpi: string; records: string }>(
      `SELECT COALESCE(pg_filenode_relation(0, (regexp_match(block_ref, 'rel [0-9]+/[0-9]+/([0-9]+)'))[1]::oid)::regclass::text,
                       '(no relation)') AS relation,
              sum(record_length) AS bytes, sum(fpi_length) AS fpi, count(*) AS records
         FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
        GROUP BY 1 ORDER BY 2 DESC`,
      [from, to],
    );
    return rows.map((r) => ({
      relation: r.relation,
      bytes: Number(r.bytes),
      fpiBytes: Number(r.fpi),
      records: Number(r.records),
    }));
  } catch {
    return [];
  }
}

export interface ServerStatement {
  query: string;
  calls: number;
  rows: number;
  walBytes: number;
}

/**
 * Whether `pg_stat_statements` can be read in this database (the server preloads it): creates the
 * extension when it can. False: only the client-side count is available.
 */
export async function enableStatements(observer: pg.Pool): Promise<boolean> {
  try {
    await observer.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await observer.query('SELECT pg_stat_statements_reset()');
    return true;
  } catch {
    return false;
  }
}

/** The app user's statements in this database since the last reset (`role`: the app's role). */
export async function serverStatements(observer: pg.Pool, role: string): Promise<ServerStatement[]> {
  const { rows } = await observer.query<{ query: string; calls: string; rows: string; wal_bytes: string }>(
    `SELECT query, calls, rows, wal_bytes FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND userid = (SELECT oid FROM pg_roles WHERE rolname = $1)
      ORDER BY calls DESC`,
    [role],
  );
  return rows.map((r) => ({
    query: r.query.replace(/\s+/g, ' ').trim(),
    calls: Number(r.calls),
    rows: Number(r.rows),
    walBytes: Number(r.wal_bytes),
  }));
}

/** What a phase wrote and ran, between two snapshots. */
export interface PhaseCounts {
  client: Map<string, number>;
  server: ServerStatement[];
  serverCounts: boolean;
  tables: [string, TableStats][];
  walBytes: number;
  walRelations: RelationWal[];
}

export async function countsOf(
  observer: pg.Pool,
  q: { before: Snapshot; after: Snapshot; serverCounts: boolean; role: string },
): Promise<PhaseCounts> {
  return {
    client: takeClientCounts(),
    server: q.serverCounts ? await serverStatements(observer, q.role) : [],
    serverCounts: q.serverCounts,
    tables: tableDeltas(q.before, q.after),
    walBytes: await walBytes(observer, q.before.walLsn, q.after.walLsn),
    walRelations: await walByRelation(observer, q.before.walLsn, q.after.walLsn),
  };
}

/** A phase's figures per email, its breakdown on stderr, and its details for the JSON. */
export function reportPhase(
  name: string,
  n: number,
  c: PhaseCounts,
  opts: { variant: string; walNote: string },
): { figures: Figure[]; details: Record<string, unknown> } {
  const clientTotal = [...c.client.values()].reduce((a, b) => a + b, 0);
  const serverTotal = c.server.reduce((a, s) => a + s.calls, 0);
  const sum = (k: keyof TableStats) => c.tables.reduce((a, [, t]) => a + t[k], 0);
  const rows = sum('ins') + sum('upd') + sum('del');
  const hot = sum('upd') > 0 ? (sum('hot') / sum('upd')) * 100 : 0;
  const per = (x: number) => round(x / n, 2);
  const fig = figureMaker('pgwork', opts.variant);
  const figures = [
    ...(c.serverCounts
      ? [fig('statements per email (pg_stat_statements)', serverTotal / n, 'statements')]
      : []),
    fig('statements per email (client count)', clientTotal / n, 'statements'),
    fig('rows written per email (ins+upd+del)', rows / n, 'rows'),
    fig('of which updates per email', sum('upd') / n, 'rows'),
    fig('HOT updates / updates', hot, '%'),
    fig(`WAL bytes per email${opts.walNote}`, c.walBytes / n, 'bytes'),
  ];
  const log = (line: string) => console.error(line);
  log(
    `[pgwork] ${name}: per email ${c.serverCounts ? `${per(serverTotal)} statements (server), ` : ''}` +
      `${per(clientTotal)} (client), ${per(rows)} rows written (${per(sum('ins'))} ins, ${per(sum('upd'))} upd, ` +
      `${per(sum('del'))} del), HOT ${round(hot, 1)} %, ${per(c.walBytes)} WAL bytes`,
  );
  log(`[pgwork] ${name}: rows written per email by table (ins / upd [hot] / del):`);
  for (const [t, d] of c.tables.slice(0, 15))
    log(`    ${t.padEnd(28)} ${per(d.ins)} / ${per(d.upd)} [${per(d.hot)}] / ${per(d.del)}`);
  if (c.walRelations.length > 0) {
    log(`[pgwork] ${name}: WAL bytes per email by relation (pg_walinspect; of which full-page images):`);
    for (const r of c.walRelations.slice(0, 20))
      log(
        `    ${String(per(r.bytes)).padStart(8)} B  (${String(per(r.fpiBytes)).padStart(7)} B)  ${r.relation}`,
      );
  }
  const topClient = [...c.client].sort((a, b) => b[1] - a[1]);
  log(`[pgwork] ${name}: top statements by calls per email (client count):`);
  for (const [label, calls] of topClient.slice(0, 20))
    log(`    ${per(calls).toFixed(2).padStart(7)}  ${label}`);
  if (c.serverCounts) {
    log(`[pgwork] ${name}: top statements by calls per email (pg_stat_statements; WAL bytes per email):`);
    for (const s of c.server.slice(0, 20))
      log(
        `    ${per(s.calls).toFixed(2).padStart(7)} ${String(per(s.walBytes)).padStart(8)} B  ${s.query.slice(0, 160)}`,
      );
  }
  return {
    figures,
    details: {
      statementsServer: serverTotal,
      statementsClient: clientTotal,
      walBytes: c.walBytes,
      walRelations: c.walRelations.slice(0, 30),
      tables: Object.fromEntries(c.tables),
      topClient: Object.fromEntries(topClient.slice(0, 25)),
      topServer: c.server.slice(0, 25).map((s) => ({ ...s, query: s.query.slice(0, 300) })),
    },
  };
}
