import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTables } from '../src/postgres-sql.js';
import { randomSuffix, serverPool } from './helpers.js';

// The event log's tables are written twice, and must stay one shape: in migration 0001 (history:
// an applied migration never changes, its checksum is checked at start) and in the adapter's
// `createTables` (a log under another table name, and its leases table, which only the adapter
// uses). This test builds both and compares what Postgres made of them.
const MIGRATION = new URL('../../../infra/migrations/postgres/0001_init.sql', import.meta.url);

let pool: pg.Pool;
beforeAll(() => {
  pool = serverPool({ max: 2 });
});
afterAll(() => pool.end());

/** The migration's CREATE TABLE statements of `event_log` and `event_log_offsets`, named `name`. */
function migrationStatements(name: string): string[] {
  const sql = readFileSync(MIGRATION, 'utf8');
  const statements = [
    ...sql.matchAll(/CREATE TABLE IF NOT EXISTS (event_log(?:_offsets)?) \(([\s\S]*?)\n\);/g),
  ];
  expect(statements.map((m) => m[1])).toEqual(['event_log', 'event_log_offsets']);
  return statements.map((m) => `CREATE TABLE ${m[1]!.replace('event_log', name)} (${m[2]}\n)`);
}

/** Columns (name, type, nullability, default with the table's name taken out) and primary keys. */
async function shape(name: string) {
  const columns = await pool.query<{
    table: string;
    column: string;
    type: string;
    nullable: string;
    def: string;
  }>(
    `SELECT replace(table_name, $1, 'T') AS table, column_name AS column, data_type AS type,
            is_nullable AS nullable, coalesce(replace(column_default, $1, 'T'), '') AS def
       FROM information_schema.columns WHERE table_name IN ($1, $1 || '_offsets')
      ORDER BY table_name, ordinal_position`,
    [name],
  );
  const keys = await pool.query<{ table: string; column: string }>(
    `SELECT replace(tc.table_name, $1, 'T') AS table, kcu.column_name AS column
       FROM information_schema.table_constraints tc
       JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)
      WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_name IN ($1, $1 || '_offsets')
      ORDER BY 1, 2`,
    [name],
  );
  return { columns: columns.rows, keys: keys.rows };
}

describe('the event log schema (issue 41 item 5)', () => {
  it('is the same whether the migrations or the adapter made it', async () => {
    const migrated = `elm_${randomSuffix()}`;
    const adapted = `ela_${randomSuffix()}`;
    try {
      for (const statement of migrationStatements(migrated)) await pool.query(statement);
      await createTables(pool, adapted);
      const [m, a] = [await shape(migrated), await shape(adapted)];
      expect(m.columns.map((c) => c.column)).toEqual([
        'seq',
        'key',
        'value',
        'appended_at',
        'group_id',
        'next_seq',
      ]);
      expect(a).toEqual(m);
      const leases = await pool.query('SELECT 1 FROM information_schema.tables WHERE table_name = $1', [
        `${adapted}_leases`,
      ]);
      expect(leases.rowCount).toBe(1);
    } finally {
      for (const t of [migrated, adapted])
        await pool.query(`DROP TABLE IF EXISTS ${t}, ${t}_offsets, ${t}_leases`);
    }
  });
});
