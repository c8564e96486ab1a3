// A fresh database of its own for an integration test: Tern's schema migrated and the Postgres-table
// event log (`createPostgresEventLog`) ready on it, as the all-in-one deployment has them.
import { createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { createFreshDatabase } from './services.js';

export interface LogDatabase {
  /** The database's URL (dropped by `close()`). */
  readonly url: string;
  readonly pool: pg.Pool;
  readonly log: PostgresEventLog;
  /** Closes the log and the pool, then drops the database (once; later calls wait for that). */
  close(): Promise<void>;
}

export interface LogDatabaseOptions {
  /** The pool's size (default 4). */
  poolMax?: number;
  /** How often the log's readers poll for new records (default 20 ms: tests wait on them). */
  pollIntervalMs?: number;
}

export async function openLogDatabase({
  poolMax = 4,
  pollIntervalMs = 20,
}: LogDatabaseOptions = {}): Promise<LogDatabase> {
  const db = await createFreshDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: poolMax });
  pool.on('error', () => undefined);
  let log: PostgresEventLog | undefined;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await log?.close();
      await pool.end();
      await db.drop();
    })();
    return closing;
  };
  try {
    await migratePostgres(pool);
    log = createPostgresEventLog({ pool, pollIntervalMs });
    await log.ensureSchema();
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
  return { url: db.url, pool, log, close };
}
