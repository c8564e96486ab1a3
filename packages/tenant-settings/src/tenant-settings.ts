import { DEFAULT_TRACKING, type TrackingSettings } from '@tern/contracts';
import { analyticsWatermarkSql, projectorStatusSql } from '@tern/read-models';
import { READ_MODEL_CHANNEL, readModelPayload } from '@tern/stores';
import type pg from 'pg';

/**
 * The owner of `tenant_settings` (docs/architecture.md § "Who owns a table"): the api's settings
 * routes and read context, the sender's rate and tracking, the worker's retention all read it here.
 */

/** What every read of a tenant needs besides its data: its retention and the projection's freshness. */
export interface TenantReadContext {
  /** The tenant's override, or null (then the server default applies). */
  retentionOverride: number | null;
  /** `projection_status.last_batch_at`: the data reflects every batch committed until then. */
  asOf: Date | null;
  /**
   * The analytics watermark: a value that changes whenever what ClickHouse answers may change
   * (`events_total` grows with every applied batch, `last_batch_at` moves), or null while a batch
   * is committed in Postgres but not yet shipped to ClickHouse (its outbox row is still there):
   * then ClickHouse may lag the watermark and nothing may be memoised on it.
   */
  watermark: string | null;
}

// Composed once: the text every read sends (a named statement, planned once per connection).
const READ_CONTEXT_SQL = `SELECT (SELECT retention_days FROM tenant_settings WHERE tenant_id = $1) AS retention_days,
            s.last_batch_at, ${analyticsWatermarkSql('s')} AS watermark
       FROM (SELECT 1) AS one
       LEFT JOIN ${projectorStatusSql} s ON true`;

/**
 * One round trip for all three, before the data query; the projection's freshness and the
 * watermark are packages/read-models' fragments (`projectorStatusSql`, `analyticsWatermarkSql`).
 */
export async function tenantReadContext(pool: pg.Pool, tenantId: string): Promise<TenantReadContext> {
  const { rows } = await pool.query<{
    retention_days: number | null;
    last_batch_at: Date | null;
    watermark: string | null;
  }>({ name: 'tenant_read_context', text: READ_CONTEXT_SQL, values: [tenantId] });
  const row = rows[0];
  return {
    retentionOverride: row?.retention_days ?? null,
    asOf: row?.last_batch_at ?? null,
    watermark: row?.watermark ?? null,
  };
}

/** Every tenant's retention override (SPEC §9), by tenant id. */
export async function retentionOverrides(
  db: Pick<pg.ClientBase, 'query'>,
): Promise<{ tenant_id: string; retention_days: number }[]> {
  const { rows } = await db.query<{ tenant_id: string; retention_days: number }>(
    'SELECT tenant_id, retention_days FROM tenant_settings WHERE retention_days IS NOT NULL ORDER BY tenant_id',
  );
  return rows;
}

export async function getRetentionOverride(pool: pg.Pool, tenantId: string): Promise<number | null> {
  const { rows } = await pool.query<{ retention_days: number | null }>(
    'SELECT retention_days FROM tenant_settings WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.retention_days ?? null;
}

/** The tenant's send rate (SPEC §23), or null for the server default. */
export async function getSendRate(pool: pg.Pool, tenantId: string): Promise<number | null> {
  const { rows } = await pool.query<{ send_rate_per_second: number | null }>(
    'SELECT send_rate_per_second FROM tenant_settings WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.send_rate_per_second ?? null;
}

export async function setSendRate(
  pool: pg.Pool,
  tenantId: string,
  sendRatePerSecond: number | null,
  at: Date,
): Promise<void> {
  await pool.query(
    `INSERT INTO tenant_settings (tenant_id, send_rate_per_second, updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id) DO UPDATE
       SET send_rate_per_second = EXCLUDED.send_rate_per_second, updated_at = EXCLUDED.updated_at`,
    [tenantId, sendRatePerSecond, at],
  );
}

export async function setRetentionOverride(
  pool: pg.Pool,
  tenantId: string,
  retentionDays: number | null,
  at: Date,
): Promise<void> {
  // One statement: the api processes hear of the new retention when it commits.
  await pool.query(
    `WITH saved AS (
       INSERT INTO tenant_settings (tenant_id, retention_days, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id) DO UPDATE SET retention_days = EXCLUDED.retention_days, updated_at = EXCLUDED.updated_at
     )
     SELECT pg_notify($4, $5)`,
    [
      tenantId,
      retentionDays,
      at,
      READ_MODEL_CHANNEL,
      readModelPayload({ kind: 'settings', tenants: [tenantId] }),
    ],
  );
}

export async function getTracking(pool: pg.Pool, tenantId: string): Promise<TrackingSettings> {
  const { rows } = await pool.query<{ opens: boolean | null; clicks: boolean | null }>(
    'SELECT tracking_opens AS opens, tracking_clicks AS clicks FROM tenant_settings WHERE tenant_id = $1',
    [tenantId],
  );
  const r = rows[0];
  return { opens: r?.opens ?? DEFAULT_TRACKING.opens, clicks: r?.clicks ?? DEFAULT_TRACKING.clicks };
}

/**
 * Merges the given tracking fields into the tenant's settings (issue 24, item 16): a field left
 * out keeps its value (null in the row = the default), in one statement.
 */
export async function setTracking(
  pool: pg.Pool,
  tenantId: string,
  tracking: Partial<TrackingSettings>,
  at: Date,
): Promise<void> {
  await pool.query(
    `INSERT INTO tenant_settings (tenant_id, tracking_opens, tracking_clicks, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id) DO UPDATE
       SET tracking_opens = COALESCE(EXCLUDED.tracking_opens, tenant_settings.tracking_opens),
           tracking_clicks = COALESCE(EXCLUDED.tracking_clicks, tenant_settings.tracking_clicks),
           updated_at = EXCLUDED.updated_at`,
    [tenantId, tracking.opens ?? null, tracking.clicks ?? null, at],
  );
}

/** The tenant's IANA time zone (SPEC §26), or null (UTC). */
export async function getTimeZone(pool: pg.Pool, tenantId: string): Promise<string | null> {
  const { rows } = await pool.query<{ time_zone: string | null }>(
    'SELECT time_zone FROM tenant_settings WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.time_zone ?? null;
}

export async function setTimeZone(pool: pg.Pool, tenantId: string, timeZone: string | null, at: Date) {
  await pool.query(
    `INSERT INTO tenant_settings (tenant_id, time_zone, updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id) DO UPDATE SET time_zone = EXCLUDED.time_zone, updated_at = EXCLUDED.updated_at`,
    [tenantId, timeZone, at],
  );
}
