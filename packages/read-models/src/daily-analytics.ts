import type { ClickHouseClient } from '@clickhouse/client';
import { type AnalyticsDelta, type DimDelta, utcDay } from '@tern/domain';
import { READ_MODEL_CHANNEL, readModelPayload } from '@tern/stores';
import type pg from 'pg';
import {
  createDimTagsVersion,
  dimTagsTableOf,
  dimTagsTables,
  noCompanion,
  serveDimTagsTable,
  tagRowsOf,
} from './dim-tags.js';
import type { ChReadModel, ProjectionBatch } from './read-model.js';
import { lastClaim } from './timeline.js';

export const DAILY_TABLE = 'email_daily_v2';
/** The same deltas per project, for emails that name one (SPEC §16). */
export const PROJECT_DAILY_TABLE = 'email_project_daily_v1';
/** Machine-opened emails per day and project (SPEC §21): only rows whose count changed. */
export const MACHINE_DAILY_TABLE = 'email_machine_daily_v1';
/**
 * The sliceable rollup (SPEC §26): per (tenant, 15-min bucket, dimensions). Versioned: a new
 * version is a new table, filled by `npm run reproject -- analytics` while this one serves.
 */
export const DIMS_TABLE = 'email_dims_v1';
/** What readers query: a view over the serving version, replaced by a reprojection's swap. */
export const DIMS_VIEW = 'email_dims';
/** The versions of the sliceable rollup: `email_dims_v<n>`. */
export const DIMS_VERSION = /^email_dims_v([1-9][0-9]*)$/;
/** The Postgres outbox of batches not yet shipped to ClickHouse. */
export const OUTBOX_TABLE = 'analytics_outbox';

/** The counters of the two daily rollups (machineOpened has a table of its own; outbox rows written before it lack it). */
const dailyCounters = ({ machineOpened: _machine, ...rest }: AnalyticsDelta['counters']) => rest;

/**
 * Writes one outbox batch to ClickHouse, with its batch id as insert deduplication token:
 * shipping the same batch twice (a crash between the insert and the outbox delete, a retried
 * insert) cannot count twice. See infra/migrations/clickhouse/0002_email_daily_v2.sql.
 */
export async function shipBatch(
  ch: ClickHouseClient,
  batchId: string,
  rows: readonly AnalyticsDelta[],
  dimRows: readonly DimDelta[] = [],
  dimTables: readonly string[] = [DIMS_TABLE],
): Promise<void> {
  // The daily rollups first: /analytics/summary, what most readers ask right after a send, is
  // then current before the sliceable rollup's insert, the slower one (its hourly projections are
  // written with it: 60-150 ms an insert on chDB against 8-16 without).
  await shipDailyRows(ch, batchId, rows);
  // The sliceable rollup, each version the batch's transaction named: same token, each table's
  // own dedup window.
  for (const table of dimTables) await shipDimRows(ch, table, batchId, dimRows);
}

/** `values` into `table` as JSONEachRow under `token`: a block shipped again with it is dropped. */
async function insertDeduplicated(ch: ClickHouseClient, table: string, token: string, values: object[]) {
  await ch.insert({
    table,
    format: 'JSONEachRow',
    values,
    clickhouse_settings: { insert_deduplication_token: token },
  });
}

/** A row of a daily rollup (email_daily_v2; the projects' daily adds the project). */
const dailyRowOf = (r: AnalyticsDelta) => ({
  tenant_id: r.tenantId,
  day: r.day,
  template_id: r.templateId,
  ...dailyCounters(r.counters),
});

/** The daily rollups' part of a batch (email_daily_v2, the machine opens, the projects' daily). */
async function shipDailyRows(ch: ClickHouseClient, batchId: string, rows: readonly AnalyticsDelta[]) {
  if (rows.length === 0) return;
  await insertDeduplicated(ch, DAILY_TABLE, batchId, rows.map(dailyRowOf));
  const machine = rows.filter((r) => (r.counters.machineOpened ?? 0) !== 0);
  if (machine.length > 0) {
    await insertDeduplicated(
      ch,
      MACHINE_DAILY_TABLE,
      batchId,
      machine.map((r) => ({
        tenant_id: r.tenantId,
        day: r.day,
        project_id: r.projectId ?? '',
        machine_opened: r.counters.machineOpened,
      })),
    );
  }
  // Outbox rows written before projects existed have no projectId: they belong to no project.
  const inProjects = rows.filter((r) => (r.projectId ?? '') !== '');
  if (inProjects.length === 0) return;
  // Same token, another table: a crash between the two inserts re-ships both, and each table
  // drops the block it already has.
  await insertDeduplicated(
    ch,
    PROJECT_DAILY_TABLE,
    batchId,
    inProjects.map((r) => ({ ...dailyRowOf(r), project_id: r.projectId })),
  );
}

/** The sliceable rollup's row of a delta (ClickHouse column names). */
export const dimRowOf = (r: DimDelta) => ({
  tenant_id: r.tenantId,
  bucket: r.bucket,
  template_id: r.templateId,
  project_id: r.projectId,
  campaign_id: r.campaignId,
  sending_domain: r.sendingDomain,
  mailbox_provider: r.mailboxProvider,
  tags: r.tags,
  client_family: r.clientFamily,
  device_type: r.deviceType,
  bounce_category: r.bounceCategory,
  delivery_seconds: r.deliverySeconds,
  ...r.counters,
});

/** Inserts dimension deltas into `table` (a version of the sliceable rollup) under a dedup token. */
export async function shipDimRows(
  ch: ClickHouseClient,
  table: string,
  token: string,
  rows: readonly DimDelta[],
): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map(dimRowOf);
  await insertDeduplicated(ch, table, token, values);
  // Its tag companion (dim-tags.ts), same token: a re-shipped block is dropped by each table.
  const tagged = tagRowsOf(values);
  if (tagged.length > 0)
    await insertDeduplicated(ch, dimTagsTableOf(table), token, tagged).catch(noCompanion);
}

export type ShipFn = (
  ch: ClickHouseClient,
  batchId: string,
  rows: readonly AnalyticsDelta[],
  dimRows?: readonly DimDelta[],
  dimTables?: readonly string[],
) => Promise<void>;

/** Ships and deletes outbox rows; `olderThanMs` limits it to batches another run left behind. */
export async function shipPendingOutbox(
  pool: pg.Pool,
  ch: ClickHouseClient,
  opts: { olderThanMs?: number; limit?: number; ship?: ShipFn } = {},
): Promise<number> {
  const ship = opts.ship ?? shipBatch;
  const pending = await pool.query<{
    batch_id: string;
    rows: AnalyticsDelta[];
    dim_rows: DimDelta[];
    dim_tables: string[] | null;
  }>(
    `SELECT batch_id, rows, dim_rows, dim_tables FROM analytics_outbox
      WHERE created_at <= now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY created_at LIMIT $2`,
    [opts.olderThanMs ?? 0, opts.limit ?? 100],
  );
  for (const row of pending.rows) {
    await ship(ch, row.batch_id, row.rows, row.dim_rows, row.dim_tables ?? [DIMS_TABLE]);
    await completeOutbox(pool, row.batch_id, row.rows, row.dim_rows);
  }
  return pending.rows.length;
}

/**
 * Deletes a shipped outbox batch and tells the api processes that these tenants' analytics
 * changed (one statement: the notice is sent when the delete commits).
 */
export async function completeOutbox(
  pool: pg.Pool,
  batchId: string,
  rows: readonly AnalyticsDelta[],
  dimRows: readonly DimDelta[] = [],
): Promise<void> {
  const tenants = [...new Set([...rows, ...dimRows].map((r) => r.tenantId))];
  await pool.query(
    'WITH shipped AS (DELETE FROM analytics_outbox WHERE batch_id = $1) SELECT pg_notify($2, $3)',
    [batchId, READ_MODEL_CHANNEL, readModelPayload({ kind: 'analytics', tenants })],
  );
}

/**
 * The analytics watermark as an SQL expression, embedded by packages/tenant-settings'
 * `tenantReadContext` (one round trip): null while an outbox batch is not yet shipped (ClickHouse
 * may lag), else `<events_total>@<last_batch_at>` of `status`, the alias of a
 * `projectorStatusSql` relation (projection-status.ts).
 */
export const analyticsWatermarkSql = (status: string) =>
  `CASE WHEN EXISTS (SELECT 1 FROM analytics_outbox) THEN NULL
        ELSE coalesce(${status}.events_total, 0)::text || '@' || coalesce(${status}.last_batch_at::text, '-') END`;

/** One outbox row: a batch's change of the daily rollups and of the sliceable one. */
export type Outbox = { batchId: string; rows: AnalyticsDelta[]; dimRows: DimDelta[]; dimTables: string[] };

/**
 * The versions of the sliceable rollup this transaction's batch writes (`analytics_dims_targets`).
 * Read FIRST in the projector's transaction: its ACCESS SHARE lock, held until commit, is what a
 * reprojection's switch waits for (services/projector/src/reproject.ts).
 */
export async function dimTargets(client: pg.ClientBase): Promise<string[]> {
  const { rows } = await client.query<{ tables: string[] }>('SELECT tables FROM analytics_dims_targets');
  return rows[0]?.tables ?? [DIMS_TABLE];
}

/** Writes a batch's rollup change to the outbox, in the projector's transaction; null when no figure moved. */
export async function writeOutbox(
  client: pg.ClientBase,
  batch: ProjectionBatch,
  newBatchId: () => string,
  dimTables: string[] = [DIMS_TABLE],
): Promise<Outbox | null> {
  const rows = batch.folded.deltas;
  // No version named (`analytics_dims_targets` emptied: the sliceable rollup switched off): the
  // dimension rows would never be shipped, so they are not written either.
  const dimRows = dimTables.length === 0 ? [] : batch.folded.dimDeltas;
  if (rows.length === 0 && dimRows.length === 0) return null;
  const outbox = { batchId: newBatchId(), rows, dimRows, dimTables };
  await client.query(
    'INSERT INTO analytics_outbox (batch_id, rows, dim_rows, dim_tables) VALUES ($1, $2::jsonb, $3::jsonb, $4)',
    [outbox.batchId, JSON.stringify(rows), JSON.stringify(dimRows), dimTables],
  );
  return outbox;
}

/** Every day table, emptied by a rebuild. */
export const ROLLUP_TABLES = [DAILY_TABLE, PROJECT_DAILY_TABLE, MACHINE_DAILY_TABLE, DIMS_TABLE] as const;

/**
 * Issues the ClickHouse DELETE only when there is something to delete (a DELETE is a mutation),
 * in each rollup: every email's, the per-project one (SPEC §16) and the machine opens. Counts
 * the DELETEs issued.
 */
async function deleteDays(ch: ClickHouseClient, where: string, params: Record<string, unknown>) {
  let issued = 0;
  for (const table of await rollupTables(ch)) {
    const probe = await ch.query({
      query: `SELECT count() AS n FROM ${table} WHERE ${where}`,
      query_params: params,
      format: 'JSONEachRow',
    });
    const [row] = await probe.json<{ n: string | number }>();
    if (Number(row?.n ?? 0) === 0) continue;
    await ch.command({ query: `DELETE FROM ${table} WHERE ${where}`, query_params: params });
    issued++;
  }
  return issued;
}

/** Daily analytics (SPEC §6, §16, §21): ClickHouse rollups fed through `analytics_outbox`. */
export const dailyAnalytics: ChReadModel = {
  name: 'daily analytics',
  store: 'clickhouse',
  tables: [...ROLLUP_TABLES, dimTagsTableOf(DIMS_TABLE), OUTBOX_TABLE],
  expire(ch, scope, cutoff) {
    const cutoffDay = utcDay(cutoff.getTime());
    return 'tenantId' in scope
      ? deleteDays(ch, 'tenant_id = {tenantId:String} AND day < {cutoffDay:Date}', {
          tenantId: scope.tenantId,
          cutoffDay,
        })
      : deleteDays(ch, 'day < {cutoffDay:Date} AND NOT has({overridden:Array(String)}, tenant_id)', {
          cutoffDay,
          overridden: scope.allBut,
        });
  },
};

/**
 * Takes `analytics_dims_targets` ACCESS EXCLUSIVE in `client`'s transaction: every projector batch
 * reads that row first in its own transaction (`dimTargets`), so this waits for the batches in
 * flight to commit, and the next ones wait for this transaction. Returns the last timeline claim
 * (`email_events.claim_seq`) taken by then: no claim after it commits before this transaction.
 */
export async function lockDimTargets(client: pg.ClientBase): Promise<number> {
  await client.query('LOCK TABLE analytics_dims_targets IN ACCESS EXCLUSIVE MODE');
  return lastClaim(client);
}

/** Names the versions the live projector writes (in `lockDimTargets`' transaction, or alone). */
export async function setDimTargets(db: pg.Pool | pg.ClientBase, tables: readonly string[]): Promise<void> {
  await db.query('UPDATE analytics_dims_targets SET tables = $1, updated_at = now()', [tables]);
}

/** The version `email_dims` serves: the first target (both are switched together by a reprojection). */
export async function servingDimsTable(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ tables: string[] }>('SELECT tables FROM analytics_dims_targets');
  return rows[0]?.tables[0] ?? DIMS_TABLE;
}

/**
 * (Re)creates the version `to` of the sliceable rollup empty, with the structure and engine of
 * `from` plus `addColumns` (ClickHouse column definitions). A leftover of a stopped run is dropped.
 */
export async function createDimsVersion(
  ch: ClickHouseClient,
  from: string,
  to: string,
  addColumns: readonly string[] = [],
): Promise<void> {
  for (const t of [from, to])
    if (!DIMS_VERSION.test(t)) throw new Error(`not a version of the sliceable rollup: ${t}`);
  await ch.command({ query: `DROP TABLE IF EXISTS ${to}` });
  await ch.command({ query: `CREATE TABLE ${to} AS ${from}` });
  for (const column of addColumns) await ch.command({ query: `ALTER TABLE ${to} ADD COLUMN ${column}` });
  await createDimTagsVersion(ch, from, to, addColumns);
}

/** Points `email_dims`, what every reader queries, at `table`: one atomic metadata change. */
export async function serveDimsTable(ch: ClickHouseClient, table: string): Promise<void> {
  if (!DIMS_VERSION.test(table)) throw new Error(`not a version of the sliceable rollup: ${table}`);
  await ch.command({ query: `CREATE OR REPLACE VIEW ${DIMS_VIEW} AS SELECT *, day FROM ${table}` });
  await serveDimTagsTable(ch, table);
}

/** The versions of the sliceable rollup that exist in ClickHouse, oldest first. */
export async function dimVersions(ch: ClickHouseClient): Promise<{ table: string; version: number }[]> {
  const rs = await ch.query({
    query: "SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'email_dims_v%'",
    format: 'JSONEachRow',
  });
  return (await rs.json<{ name: string }>())
    .map((r) => ({ table: r.name, version: Number(DIMS_VERSION.exec(r.name)?.[1] ?? 0) }))
    .filter((v) => v.version > 0)
    .sort((a, b) => a.version - b.version);
}

/**
 * A rebuild's start: the outbox emptied (Postgres) and every rollup truncated (ClickHouse), each
 * version of the sliceable one too (the projector writes the one `analytics_dims_targets` names).
 */
export async function truncateRollups(ch: ClickHouseClient): Promise<void> {
  for (const table of await rollupTables(ch))
    await ch.command({ query: `TRUNCATE TABLE IF EXISTS ${table}` });
}

/**
 * Every rollup table: the day tables, every version of the sliceable rollup (the serving one and
 * one a reprojection is filling) and their tag companions.
 */
async function rollupTables(ch: ClickHouseClient): Promise<string[]> {
  const versions = (await dimVersions(ch)).map((v) => v.table);
  return [...new Set([...ROLLUP_TABLES, ...versions, ...(await dimTagsTables(ch))])];
}
