import type { ClickHouseClient } from '@clickhouse/client';
import type { AnalyticsDelta } from '@tern/domain';
import { READ_MODEL_CHANNEL, readModelPayload } from '@tern/stores';
import type pg from 'pg';

export const DAILY_TABLE = 'email_daily_v2';
/** The same deltas per project, for emails that name one (SPEC §16). */
export const PROJECT_DAILY_TABLE = 'email_project_daily_v1';
/** Machine-opened emails per day and project (SPEC §21): only rows whose count changed. */
export const MACHINE_DAILY_TABLE = 'email_machine_daily_v1';

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
): Promise<void> {
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

export type ShipFn = (
  ch: ClickHouseClient,
  batchId: string,
  rows: readonly AnalyticsDelta[],
) => Promise<void>;

/** Ships and deletes outbox rows; `olderThanMs` limits it to batches another run left behind. */
export async function shipPendingOutbox(
  pool: pg.Pool,
  ch: ClickHouseClient,
  opts: { olderThanMs?: number; limit?: number; ship?: ShipFn } = {},
): Promise<number> {
  const ship = opts.ship ?? shipBatch;
  const pending = await pool.query<{ batch_id: string; rows: AnalyticsDelta[] }>(
    `SELECT batch_id, rows FROM analytics_outbox
      WHERE created_at <= now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY created_at LIMIT $2`,
    [opts.olderThanMs ?? 0, opts.limit ?? 100],
  );
  for (const row of pending.rows) {
    await ship(ch, row.batch_id, row.rows);
    await completeOutbox(pool, row.batch_id, row.rows);
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
): Promise<void> {
  await pool.query(
    'WITH shipped AS (DELETE FROM analytics_outbox WHERE batch_id = $1) SELECT pg_notify($2, $3)',
    [
      batchId,
      READ_MODEL_CHANNEL,
      readModelPayload({ kind: 'analytics', tenants: rows.map((r) => r.tenantId) }),
    ],
  );
}
