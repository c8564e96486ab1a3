// The SQL of the Postgres event log's tables: creating them, and appending in seq order.
import { withTransaction } from '@tern/kernel';
import type pg from 'pg';
import type { EventLogRecord } from './port.js';

// First key of the two-int advisory locks, so ours cannot collide with another app's.
const LOCK_NAMESPACE = 0x7465726e; // 'tern'

/** Creates `table`, `<table>_offsets` and `<table>_leases` if missing (`table` is a checked identifier). */
export async function createTables(pool: pg.Pool, table: string): Promise<void> {
  const offsetsTable = `${table}_offsets`;
  const leasesTable = `${table}_leases`;
  await withTransaction(pool, async (client) => {
    // Concurrent CREATE TABLE IF NOT EXISTS can still collide on the catalog; serialise it.
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_NAMESPACE, `${table}:ddl`]);
    // Same shapes as infra/migrations/postgres (which may have created the first two already).
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${table} (
        seq         bigserial primary key,   -- global order; appends are serialised so seqs become visible in order
        key         text not null,           -- emailId (the Kafka key)
        value       text not null,           -- the event as JSON
        appended_at timestamptz default now()
      )`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${offsetsTable} (
        group_id text primary key,           -- consumer group name
        next_seq bigint not null             -- first seq the group has not committed
      )`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${leasesTable} (
        group_id    text primary key,        -- consumer group name
        owner       text not null,           -- the one consumer allowed to handle and commit
        lease_until timestamptz not null     -- another consumer may take over after this
      )`);
  });
}

/** Appends `records` in one statement (its own transaction), their seqs visible in order. */
export async function insertRecords(pool: pg.Pool, table: string, records: EventLogRecord[]): Promise<void> {
  // A bigserial is drawn at insert but becomes visible at commit, so two concurrent appends
  // could commit out of seq order and a reader at `seq >= next_seq` would skip the lower one
  // forever. Holding this lock until commit makes seqs visible in order: it is taken by the
  // materialised CTE, which the sorted input reads whole before the first row (and its seq) is
  // inserted. The NOTIFY is sent at commit. One statement rather than BEGIN, lock, INSERT and
  // COMMIT (issue 45: four statements per append).
  await pool.query(
    `WITH locked AS MATERIALIZED (SELECT pg_advisory_xact_lock($1, hashtext($2)), pg_notify($3, $4))
     INSERT INTO ${table} (key, value)
     SELECT r.k, r.v FROM locked, unnest($5::text[], $6::text[]) WITH ORDINALITY AS r(k, v, i) ORDER BY r.i`,
    [LOCK_NAMESPACE, table, table, '', records.map((r) => r.key), records.map((r) => r.value)],
  );
}

/**
 * Deletes at most `limit` records of the Postgres event log `table` that the consumer group `group`
 * has committed past AND that were appended before `before` (the projector's prune job, issue 9
 * item 7): a record is never deleted before that group applied it. Returns the rows deleted.
 */
export async function pruneCommitted(
  pool: pg.Pool,
  table: string,
  group: string,
  before: Date,
  limit: number,
): Promise<number> {
  const r = await pool.query(
    `DELETE FROM ${table} WHERE seq IN (
       SELECT seq FROM ${table}
        WHERE seq < (SELECT next_seq FROM ${table}_offsets WHERE group_id = $1)
          AND appended_at < $2
        ORDER BY seq LIMIT $3)`,
    [group, before, limit],
  );
  return r.rowCount ?? 0;
}
