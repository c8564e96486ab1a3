import type { ClickHouseClient } from '@clickhouse/client';
import { type AnalyticsDelta, type DimDelta, utcDay } from '@tern/domain';
import { READ_MODEL_CHANNEL, readModelPayload } from '@tern/stores';
import type pg from 'pg';
import type { ChReadModel, ProjectionBatch } from './read-model.js';

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
): Promise<void> {
  // The sliceable rollup first: same token, its own table's dedup window.
  await shipDimRows(ch, DIMS_TABLE, batchId, dimRows);
  if (rows.length === 0) return;
  await ch.insert({
    table: DAILY_TABLE,
    format: 'JSONEachRow',
    values: rows.map((r) => ({
      tenant_id: r.tenantId,
      day: r.day,
      template_id: r.templateId,
      ...dailyCounters(r.counters),
    })),
    clickhouse_settings: { insert_deduplication_token: batchId },
  });
  const machine = rows.filter((r) => (r.counters.machineOpened ?? 0) !== 0);
  if (machine.length > 0) {
    await ch.insert({
      table: MACHINE_DAILY_TABLE,
      format: 'JSONEachRow',
      values: machine.map((r) => ({
        tenant_id: r.tenantId,
        day: r.day,
        project_id: r.projectId ?? '',
        machine_opened: r.counters.machineOpened,
      })),
      clickhouse_settings: { insert_deduplication_token: batchId },
    });
  }
  // Outbox rows written before projects existed have no projectId: they belong to no project.
  const inProjects = rows.filter((r) => (r.projectId ?? '') !== '');
  if (inProjects.length === 0) return;
  // Same token, another table: a crash between the two inserts re-ships both, and each table
  // drops the block it already has.
  await ch.insert({
    table: PROJECT_DAILY_TABLE,
    format: 'JSONEachRow',
    values: inProjects.map((r) => ({
      tenant_id: r.tenantId,
      project_id: r.projectId,
      day: r.day,
      template_id: r.templateId,
      ...dailyCounters(r.counters),
    })),
    clickhouse_settings: { insert_deduplication_token: batchId },
  });
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
  await ch.insert({
    table,
    format: 'JSONEachRow',
    values: rows.map(dimRowOf),
    clickhouse_settings: { insert_deduplication_token: token },
  });
}

export type ShipFn = (
  ch: ClickHouseClient,
  batchId: string,
  rows: readonly AnalyticsDelta[],
  dimRows?: readonly DimDelta[],
) => Promise<void>;

/** Ships and deletes outbox rows; `olderThanMs` limits it to batches another run left behind. */
export async function shipPendingOutbox(
  pool: pg.Pool,
  ch: ClickHouseClient,
  opts: { olderThanMs?: number; limit?: number; ship?: ShipFn } = {},
): Promise<number> {
  const ship = opts.ship ?? shipBatch;
  const pending = await pool.query<{ batch_id: string; rows: AnalyticsDelta[]; dim_rows: DimDelta[] }>(
    `SELECT batch_id, rows, dim_rows FROM analytics_outbox
      WHERE created_at <= now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY created_at LIMIT $2`,
    [opts.olderThanMs ?? 0, opts.limit ?? 100],
  );
  for (const row of pending.rows) {
    await ship(ch, row.batch_id, row.rows, row.dim_rows);
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
export type Outbox = { batchId: string; rows: AnalyticsDelta[]; dimRows: DimDelta[] };

/** Writes a batch's rollup change to the outbox, in the projector's transaction; null when no figure moved. */
export async function writeOutbox(
  client: pg.ClientBase,
  batch: ProjectionBatch,
  newBatchId: () => string,
): Promise<Outbox | null> {
  const rows = batch.folded.deltas;
  const dimRows = batch.folded.dimDeltas;
  if (rows.length === 0 && dimRows.length === 0) return null;
  const outbox = { batchId: newBatchId(), rows, dimRows };
  await client.query(
    'INSERT INTO analytics_outbox (batch_id, rows, dim_rows) VALUES ($1, $2::jsonb, $3::jsonb)',
    [outbox.batchId, JSON.stringify(rows), JSON.stringify(dimRows)],
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
  for (const table of ROLLUP_TABLES) {
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
  tables: [...ROLLUP_TABLES, OUTBOX_TABLE],
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

/** A rebuild's start: the outbox emptied (Postgres) and every rollup truncated (ClickHouse). */
export async function truncateRollups(ch: ClickHouseClient): Promise<void> {
  for (const table of ROLLUP_TABLES) await ch.command({ query: `TRUNCATE TABLE IF EXISTS ${table}` });
}
