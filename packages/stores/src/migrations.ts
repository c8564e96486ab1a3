import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClickHouseClient } from '@clickhouse/client';
import { withTransaction } from '@tern/kernel';
import type pg from 'pg';

/**
 * Versioned migrations: `NNNN_name.sql` files applied in version order, each once, recorded in
 * a `schema_migrations` table of the store. An applied file must never change: a changed
 * checksum stops the start instead of leaving the schema in an unknown state.
 */

// Relative to this source file (packages/stores/src). A bundled service has no such layout and
// passes its own directory.
export const DEFAULT_POSTGRES_MIGRATIONS_DIR = fileURLToPath(
  new URL('../../../infra/migrations/postgres/', import.meta.url),
);
export const DEFAULT_CLICKHOUSE_MIGRATIONS_DIR = fileURLToPath(
  new URL('../../../infra/migrations/clickhouse/', import.meta.url),
);

export interface Migration {
  version: number;
  /** File name, e.g. `0001_init.sql`. */
  name: string;
  sql: string;
  /** SHA-256 hex of the file. */
  checksum: string;
}

export interface MigrationResult {
  /** File names applied by this call, in order; empty when the store was up to date. */
  applied: string[];
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Reads and orders the migration files of a directory; rejects misnamed or duplicate files. */
export async function readMigrations(dir: string): Promise<Migration[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new MigrationError(`Cannot read migrations directory ${dir}: ${(err as Error).message}`);
  }
  const migrations: Migration[] = [];
  for (const name of names) {
    if (!name.endsWith('.sql')) continue;
    const match = FILE.exec(name);
    if (!match) {
      throw new MigrationError(`Migration file ${join(dir, name)} is not named NNNN_lower_snake.sql`);
    }
    const sql = await readFile(join(dir, name), 'utf8');
    migrations.push({
      version: Number(match[1]),
      name,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    });
  }
  migrations.sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    const [prev, cur] = [migrations[i - 1]!, migrations[i]!];
    if (prev.version === cur.version) {
      throw new MigrationError(`Migrations ${prev.name} and ${cur.name} share version ${cur.version}`);
    }
  }
  return migrations;
}

function pending(migrations: Migration[], applied: ReadonlyMap<number, string>, store: string): Migration[] {
  for (const m of migrations) {
    const checksum = applied.get(m.version);
    if (checksum !== undefined && checksum !== m.checksum) {
      throw new MigrationError(
        `${store} migration ${m.name} was changed after it was applied; add a new migration instead ` +
          '(or, on a throwaway database, drop it and start again)',
      );
    }
  }
  return migrations.filter((m) => !applied.has(m.version));
}

// Any constant works; it only has to be the same for every Tern process on a database.
const PG_MIGRATION_LOCK = 7_204_311_955;

/**
 * Applies the pending Postgres migrations in one transaction, under a transaction-scoped
 * advisory lock: processes starting together wait for each other, and the later ones find
 * everything applied. A failing file rolls back the whole run. A start with nothing pending (every
 * restart) costs one query and no transaction (issue 45, item 6): the records are read first, and
 * only when one is missing does the locked run start (which reads them again under the lock).
 */
export async function migratePostgres(
  pool: pg.Pool,
  dir: string = DEFAULT_POSTGRES_MIGRATIONS_DIR,
): Promise<MigrationResult> {
  const migrations = await readMigrations(dir);
  const recorded = await pool
    .query<{ version: number; checksum: string }>('SELECT version, checksum FROM schema_migrations')
    .then((r) => r.rows)
    .catch((error: unknown) => {
      // 42P01: no table yet (a new database): the locked run creates it.
      if ((error as { code?: string }).code === '42P01') return null;
      throw error;
    });
  if (
    recorded !== null &&
    pending(migrations, new Map(recorded.map((r) => [r.version, r.checksum])), 'Postgres').length === 0
  )
    return { applied: [] };
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [PG_MIGRATION_LOCK]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version    int         PRIMARY KEY,             -- NNNN of the file
        name       text        NOT NULL,                -- file name
        checksum   text        NOT NULL,                -- SHA-256 hex of the file as applied
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const rows = await client.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations',
    );
    const applied = new Map(rows.rows.map((r) => [r.version, r.checksum]));
    const todo = pending(migrations, applied, 'Postgres');
    for (const m of todo) {
      try {
        // No parameters: the simple query protocol runs a multi-statement file as is.
        await client.query(m.sql);
      } catch (err) {
        throw new MigrationError(`Postgres migration ${m.name} failed: ${(err as Error).message}`);
      }
      await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        m.checksum,
      ]);
    }
    return { applied: todo.map((m) => m.name) };
  });
}

/**
 * Splits a ClickHouse migration file into statements: a statement ends with `;` at the end of a
 * line. Lines that are only `--` comments never end a statement, and comment-only chunks are
 * dropped. (A `;` at a line end inside a multi-line string literal would split it: don't.)
 */
export function splitClickHouseStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  const flush = () => {
    const text = current.join('\n').trim();
    const hasCode = current.some((line) => {
      const t = line.trim();
      return t !== '' && !t.startsWith('--');
    });
    if (hasCode) statements.push(text.replace(/;\s*$/, ''));
    current = [];
  };
  for (const line of sql.split(/\r?\n/)) {
    current.push(line);
    const t = line.trim();
    if (!t.startsWith('--') && /;\s*$/.test(t)) flush();
  }
  flush();
  return statements;
}

/**
 * Applies the pending ClickHouse migrations, statement by statement. ClickHouse has no
 * transactional DDL, so statements must be idempotent (`IF NOT EXISTS`): a run cut short
 * between a statement and its record is simply repeated. Concurrent starts are harmless for the
 * same reason; the record table collapses duplicate rows.
 */
export async function migrateClickHouse(
  client: ClickHouseClient,
  dir: string = DEFAULT_CLICKHOUSE_MIGRATIONS_DIR,
): Promise<MigrationResult> {
  const migrations = await readMigrations(dir);
  // Nothing pending (every restart): one query (issue 45, item 6).
  const known = await appliedClickHouse(client).catch(() => null);
  if (known !== null && pending(migrations, known, 'ClickHouse').length === 0) return { applied: [] };
  await client.command({
    query: `
      CREATE TABLE IF NOT EXISTS schema_migrations
      (
          version    UInt32        COMMENT 'NNNN of the file',
          name       String        COMMENT 'file name',
          checksum   String        COMMENT 'SHA-256 hex of the file as applied',
          applied_at DateTime64(3) DEFAULT now64(3) COMMENT 'when it was applied'
      )
      ENGINE = ReplacingMergeTree
      ORDER BY version`,
  });
  const applied = await appliedClickHouse(client);
  const todo = pending(migrations, applied, 'ClickHouse');
  for (const m of todo) {
    for (const statement of splitClickHouseStatements(m.sql)) {
      try {
        await client.command({ query: statement });
      } catch (err) {
        throw new MigrationError(`ClickHouse migration ${m.name} failed: ${(err as Error).message}`);
      }
    }
    await client.insert({
      table: 'schema_migrations',
      values: [{ version: m.version, name: m.name, checksum: m.checksum }],
      format: 'JSONEachRow',
    });
  }
  return { applied: todo.map((m) => m.name) };
}

/** The ClickHouse migrations recorded, version → checksum (the table must exist). */
async function appliedClickHouse(client: ClickHouseClient): Promise<Map<number, string>> {
  const rs = await client.query({
    query: 'SELECT version, argMax(checksum, applied_at) AS checksum FROM schema_migrations GROUP BY version',
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ version: number | string; checksum: string }>();
  return new Map(rows.map((r) => [Number(r.version), r.checksum]));
}
