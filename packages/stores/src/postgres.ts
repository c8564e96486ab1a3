import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { type Logger, silentLogger } from '@tern/kernel';
import pg from 'pg';
import {
  AUTOVACUUM_NAPTIME_MS,
  type Autovacuum,
  createAutovacuum,
  saveCarriedCounts,
  takeCarriedCounts,
} from './autovacuum.js';
import { acquireDataDirLock } from './data-dir-lock.js';
import { PgliteWire } from './pglite-wire.js';

export type PostgresKind = 'server' | 'pglite';

export interface PostgresStore {
  /** The one way to reach Postgres, whichever kind. */
  pool: pg.Pool;
  kind: PostgresKind;
  /** PGlite's autovacuum (autovacuum.ts), when on; a server runs its own. */
  autovacuum?: Autovacuum | undefined;
  /** Ends the pool and, for PGlite, stops its socket server and closes the database. Idempotent. */
  close(): Promise<void>;
}

export interface CreatePostgresOptions {
  /** Postgres server; unset → embedded PGlite in `${dataDir}/pglite`. */
  databaseUrl?: string | undefined;
  dataDir: string;
  /** Pool size for a server (default 10). PGlite always gets 1: it has a single session. */
  max?: number;
  logger?: Logger;
  /**
   * PGlite only: how often its autovacuum looks at the tables (`createAutovacuum`; a server runs
   * its own). Default `AUTOVACUUM_NAPTIME_MS` (1 min, Postgres's); 0 turns it off.
   */
  autovacuumNaptimeMs?: number;
}

/**
 * Opens Postgres. Both kinds are reached through a `pg.Pool`, so the callers' SQL is the same.
 *
 * PGlite is in-process and single-session: `pg` speaks the wire protocol to it through an
 * in-process stream (`PgliteWire`) — no TCP port, no Unix socket, so no other local process can
 * reach the database — and the pool holds one connection. Consequences
 * for callers in PGlite mode: do not hold a pool client while awaiting another pool query (it
 * would wait forever), and advisory locks do not exclude anyone (every "connection" is the one
 * session) — which is fine, as the data directory is locked to this one process.
 */
export async function createPostgres(opts: CreatePostgresOptions): Promise<PostgresStore> {
  const logger = opts.logger ?? silentLogger;
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.max ?? 10 });
    watchPoolErrors(pool, logger);
    let closed = false;
    return {
      pool,
      kind: 'server',
      async close() {
        if (closed) return;
        closed = true;
        await pool.end();
      },
    };
  }
  return openPglite(resolve(opts.dataDir), logger, opts.autovacuumNaptimeMs ?? AUTOVACUUM_NAPTIME_MS);
}

// An idle client that loses its connection emits 'error' on the pool; unhandled, that would
// crash the process. The pool drops the client and the next query opens a new one.
function watchPoolErrors(pool: pg.Pool, logger: Logger): void {
  pool.on('error', (err) => logger.warn({ err: err.message }, 'postgres idle client error'));
  // A checked-out client whose connection drops between two queries (a server restart while
  // the projector folds a batch) emits 'error' too; unheard, that would crash the process. The
  // query in flight or the next one fails instead, and the pool drops the broken client.
  pool.on('connect', (client) => {
    client.on('error', (err) => logger.warn({ err: err.message }, 'postgres client connection lost'));
  });
}

/**
 * Embedded Postgres memory (issue 10, idle RSS ≤ 400 MB): every byte PGlite's WebAssembly memory
 * grows to stays resident, as that memory never shrinks.
 * - 16 MB of shared buffers instead of 128 MB: an embedded install's working set is small.
 *   Measured: −120 MB idle.
 * - Statistics from samples of 3 000 rows instead of 30 000 (`default_statistics_target` 10, not
 *   100): ANALYZE holds its sample's rows in memory at once, so its autovacuum (autovacuum.ts) grew
 *   the process by the sample's size — a table of 40 000 rows of 2 KB: +58 MiB at 100, +4 MiB at 10
 *   (3.8 KB rows: +117 against +11), and ANALYZE took 124 → 43 ms. Ten histogram buckets and ten
 *   common values are enough for Tern's statements, which go by key and tenant ranges.
 */
export const PGLITE_CONF = ['shared_buffers = 16MB', 'default_statistics_target = 10'].join('\n');

const execFileAsync = promisify(execFile);

/**
 * How long initdb may take. Quiet, 3–4 s; at load 24 on 2 cores it passed 120 s (issue 45, item 6:
 * a first start failed there), so the bound is for a child that hangs, not for a slow machine.
 */
export const PGLITE_INIT_TIMEOUT_MS = 600_000;

/**
 * Creates a new PGlite data directory in a child process. initdb grows the WebAssembly memory of
 * the instance that runs it to ≈ 600 MB, which stays resident for the life of the process; in a
 * child it is returned to the OS on exit, and the server opens the directory as on any restart.
 * It is made beside the target and renamed into place once complete, so a start killed during
 * initdb (or its child timed out) leaves no half-made directory that the next start would open:
 * the next start removes the leftover and makes it again. The caller holds the data directory lock.
 */
export async function initPgliteDir(pgliteDir: string, timeoutMs = PGLITE_INIT_TIMEOUT_MS): Promise<void> {
  if (existsSync(join(pgliteDir, 'PG_VERSION'))) return;
  const making = `${pgliteDir}.initdb`;
  await rm(making, { recursive: true, force: true });
  const script = `const { PGlite } = await import(process.argv[1]);
const db = await PGlite.create({ dataDir: process.argv[2], postgresqlconf: process.argv[3] });
await db.close();`;
  await execFileAsync(
    process.execPath,
    ['--input-type=module', '-e', script, import.meta.resolve('@electric-sql/pglite'), making, PGLITE_CONF],
    { timeout: timeoutMs, killSignal: 'SIGKILL' },
  );
  // An empty directory left where the data goes (an older Tern's interrupted start) is replaced.
  await rm(pgliteDir, { recursive: true, force: true });
  await rename(making, pgliteDir);
}

async function openPglite(dataDir: string, logger: Logger, naptimeMs: number): Promise<PostgresStore> {
  await mkdir(dataDir, { recursive: true });
  const pgliteDir = join(dataDir, 'pglite');
  const release = acquireDataDirLock(join(dataDir, 'pglite.lock'), `PGlite data directory ${pgliteDir}`);

  let db: PGlite | undefined;
  try {
    await initPgliteDir(pgliteDir);
    db = await PGlite.create({ dataDir: pgliteDir, postgresqlconf: PGLITE_CONF });
    const wireDb = db;
    const pool = new pg.Pool({
      // In-process wire: nothing listens (issue 9, item 2). Host/port are never dialled.
      stream: () => new PgliteWire(wireDb),
      user: 'postgres',
      database: 'postgres',
      max: 1,
      // Keep the single connection: reconnecting buys nothing against an in-process database.
      idleTimeoutMillis: 0,
    });
    watchPoolErrors(pool, logger);
    logger.info({ dataDir: pgliteDir }, 'embedded PGlite started (in-process, no listener)');
    // What a server's launcher does in the background (autovacuum.ts); PGlite runs none, and keeps
    // no counts across a close: the store saves them at its close for the next open.
    const countsFile = join(dataDir, 'pglite.counters.json');
    const autovacuum =
      naptimeMs > 0
        ? createAutovacuum({ pool, naptimeMs, logger, carried: await takeCarriedCounts(countsFile, logger) })
        : undefined;
    autovacuum?.start();

    const openDb = db;
    let closing: Promise<void> | undefined;
    return {
      pool,
      kind: 'pglite',
      autovacuum,
      close() {
        closing ??= (async () => {
          try {
            if (autovacuum) {
              await autovacuum.stop();
              await saveCarriedCounts(countsFile, autovacuum, logger);
            }
            await pool.end();
            await openDb.close();
          } finally {
            release();
          }
        })();
        return closing;
      },
    };
  } catch (err) {
    await db?.close().catch(() => {});
    release();
    throw err;
  }
}
