import type { ClickHouseClient } from '@clickhouse/client';
import { retentionCutoff, utcDay } from '@tern/domain';
import { createPoller } from '@tern/jobs';
import type { Keyring } from '@tern/privacy';
import type pg from 'pg';

/**
 * Physical deletion of expired entries (SPEC §9). Visibility never depends on it: reads apply the
 * same cut-off at query time (`retentionCutoff`), so the job may run late or rarely. Postgres rows
 * go tenant by tenant in small batches (short locks, no giant transaction); ClickHouse days go
 * with a lightweight `DELETE`, per overriding tenant, then everyone else under the default.
 */

export interface RetentionJobLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface RetentionJobOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  now: () => Date;
  defaultRetentionDays: number;
  /** Rows per DELETE statement. Default 5000. */
  batchSize?: number;
  /** Pause between runs when started. Default 1 h. */
  intervalMs?: number;
  logger?: RetentionJobLogger;
  /**
   * Data keys of personal fields (SPEC §14): the keys of months wholly before a tenant's cut-off
   * are deleted, so the event log's sealed copies of old content become unreadable like an erasure.
   */
  keyring?: Pick<Keyring, 'dropPeriodsBefore'>;
}

export interface RetentionRunResult {
  /** False when another instance held the lock: nothing was done. */
  ran: boolean;
  /** Postgres `email_logs` rows deleted. */
  deletedLogs: number;
  /** ClickHouse DELETE statements issued (one per rule that had expired days). */
  clickhouseDeletes: number;
  /** Data keys deleted (months before the cut-off); present when the job has a keyring. */
  deletedKeys?: number;
}

export interface RetentionJob {
  runOnce(): Promise<RetentionRunResult>;
  /** Runs now, then every `intervalMs`; errors are logged, the schedule goes on. */
  start(): void;
  /** Cancels the schedule and waits for a run in progress. */
  stop(): Promise<void>;
}

// Any constant distinct from the other advisory locks of Tern (migrations use 7_204_311_955).
export const RETENTION_LOCK_KEY = 7_204_311_956;

const silent: RetentionJobLogger = { info() {}, warn() {}, error() {} };

export function createRetentionJob(opts: RetentionJobOptions): RetentionJob {
  const batchSize = opts.batchSize ?? 5000;
  const intervalMs = opts.intervalMs ?? 3_600_000;
  const logger = opts.logger ?? silent;
  if (!(Number.isInteger(batchSize) && batchSize >= 1))
    throw new Error('batchSize must be a positive integer');
  if (!(Number.isInteger(opts.defaultRetentionDays) && opts.defaultRetentionDays >= 1)) {
    throw new Error('defaultRetentionDays must be a positive integer');
  }

  /**
   * Runs `fn` in its own short transaction holding the job's transaction-scoped advisory lock,
   * then releases the connection and yields, so other queries interleave — with an embedded
   * single-connection PGlite, a log read waits for one batch at most, never the whole run
   * (issue 9, item 8). Null when another instance holds the lock.
   */
  async function lockedStep<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T | null> {
    const client = await opts.pool.connect();
    let result: T | null;
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_xact_lock($1) AS locked',
        [RETENTION_LOCK_KEY],
      );
      result = rows[0]?.locked ? await fn(client) : null;
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    await new Promise((r) => setImmediate(r));
    return result;
  }

  /** Deletes in batches until a batch comes back short; every batch is its own transaction. */
  async function deleteBatches(where: string, params: unknown[]): Promise<number | null> {
    const limitParam = `$${params.length + 1}`;
    let deleted = 0;
    for (;;) {
      const count = await lockedStep(async (client) => {
        const result = await client.query(
          `DELETE FROM email_logs WHERE ctid IN (
             SELECT ctid FROM email_logs e WHERE ${where} LIMIT ${limitParam})`,
          [...params, batchSize],
        );
        return result.rowCount ?? 0;
      });
      if (count === null) return deleted === 0 ? null : deleted;
      deleted += count;
      if (count < batchSize) return deleted;
    }
  }

  /**
   * Issues the ClickHouse DELETE only when there is something to delete (a DELETE is a mutation),
   * in each rollup: every email's, and the per-project one (SPEC §16). Counts DELETEs issued.
   */
  async function deleteDays(where: string, params: Record<string, unknown>): Promise<number> {
    let issued = 0;
    for (const table of ['email_daily_v2', 'email_project_daily_v1']) {
      const probe = await opts.ch.query({
        query: `SELECT count() AS n FROM ${table} WHERE ${where}`,
        query_params: params,
        format: 'JSONEachRow',
      });
      const [row] = await probe.json<{ n: string | number }>();
      if (Number(row?.n ?? 0) === 0) continue;
      await opts.ch.command({ query: `DELETE FROM ${table} WHERE ${where}`, query_params: params });
      issued++;
    }
    return issued;
  }

  /**
   * Tenants that have visible log rows, by a loose index scan of the `(tenant_id, created_at)`
   * index of 0001: one index probe per tenant instead of a scan of the table.
   */
  async function tenantsWithLogs(client: pg.PoolClient | pg.Pool): Promise<string[]> {
    const { rows } = await client.query<{ tenant_id: string }>(
      `WITH RECURSIVE t(tenant_id) AS (
         SELECT min(tenant_id) FROM email_logs WHERE created_at IS NOT NULL
         UNION ALL
         SELECT (SELECT min(e.tenant_id) FROM email_logs e
                  WHERE e.created_at IS NOT NULL AND e.tenant_id > t.tenant_id)
           FROM t WHERE t.tenant_id IS NOT NULL)
       SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL`,
    );
    return rows.map((r) => r.tenant_id);
  }

  async function runOnce(): Promise<RetentionRunResult> {
    const at = opts.now();
    // The first step claims the run: when another instance holds the lock, nothing is done.
    const plan = await lockedStep(async (client) => {
      const { rows: overrides } = await client.query<{ tenant_id: string; retention_days: number }>(
        'SELECT tenant_id, retention_days FROM tenant_settings WHERE retention_days IS NOT NULL ORDER BY tenant_id',
      );
      return { overrides, tenants: await tenantsWithLogs(client) };
    });
    if (plan === null) return { ran: false, deletedLogs: 0, clickhouseDeletes: 0 };
    const { overrides, tenants } = plan;
    const overrideOf = new Map(overrides.map((o) => [o.tenant_id, o.retention_days]));
    let deletedLogs = 0;
    let clickhouseDeletes = 0;

    // Postgres, tenant by tenant: every delete is a range of the (tenant_id, created_at) index,
    // a batch per transaction. Another instance taking over mid-run is harmless (deletes are idempotent).
    for (const tenantId of tenants) {
      const cutoff = retentionCutoff(at, overrideOf.get(tenantId) ?? opts.defaultRetentionDays);
      deletedLogs +=
        (await deleteBatches('e.tenant_id = $1 AND e.created_at IS NOT NULL AND e.created_at < $2', [
          tenantId,
          cutoff,
        ])) ?? 0;
    }

    // The log counters (email_log_counts, summed from the cut-off day on): the days before it.
    // The logs query never reads them (it sums from the cut-off day), so this is clean-up only: a
    // short step per overriding tenant and one for everybody else (a day's rows per daily run).
    // The hour counters (migration 0042) likewise: the hours before the cut-off day.
    for (const { tenant_id: tenantId, retention_days: days } of overrides) {
      const cutoffDay = utcDay(retentionCutoff(at, days).getTime());
      await lockedStep((client) =>
        client.query('DELETE FROM email_log_counts WHERE tenant_id = $1 AND day < $2::date', [
          tenantId,
          cutoffDay,
        ]),
      );
      await lockedStep((client) =>
        client.query(
          `DELETE FROM email_log_hour_counts WHERE tenant_id = $1 AND hour < ($2::date)::timestamp AT TIME ZONE 'UTC'`,
          [tenantId, cutoffDay],
        ),
      );
    }
    const defaultCutoffDay = utcDay(retentionCutoff(at, opts.defaultRetentionDays).getTime());
    const overriding = overrides.map((o) => o.tenant_id);
    await lockedStep((client) =>
      client.query(
        'DELETE FROM email_log_counts WHERE day < $1::date AND NOT (tenant_id = ANY($2::text[]))',
        [defaultCutoffDay, overriding],
      ),
    );
    await lockedStep((client) =>
      client.query(
        `DELETE FROM email_log_hour_counts
          WHERE hour < ($1::date)::timestamp AT TIME ZONE 'UTC' AND NOT (tenant_id = ANY($2::text[]))`,
        [defaultCutoffDay, overriding],
      ),
    );

    // ClickHouse: one DELETE per overriding tenant, one for everybody else.
    for (const { tenant_id: tenantId, retention_days: days } of overrides) {
      clickhouseDeletes += await deleteDays('tenant_id = {tenantId:String} AND day < {cutoffDay:Date}', {
        tenantId,
        cutoffDay: utcDay(retentionCutoff(at, days).getTime()),
      });
    }
    clickhouseDeletes += await deleteDays(
      'day < {cutoffDay:Date} AND NOT has({overridden:Array(String)}, tenant_id)',
      {
        cutoffDay: utcDay(retentionCutoff(at, opts.defaultRetentionDays).getTime()),
        overridden: overrides.map((o) => o.tenant_id),
      },
    );
    // Data keys: a month's key goes once the whole month is before the cut-off (an email of the
    // month still visible keeps it), per overriding tenant and for everybody else.
    let deletedKeys: number | undefined;
    if (opts.keyring) {
      const keyring = opts.keyring;
      deletedKeys = 0;
      for (const { tenant_id: tenantId, retention_days: days } of overrides)
        deletedKeys += await keyring.dropPeriodsBefore(retentionCutoff(at, days), tenantId);
      deletedKeys += await keyring.dropPeriodsBefore(
        retentionCutoff(at, opts.defaultRetentionDays),
        undefined,
        overrides.map((o) => o.tenant_id),
      );
    }
    const result: RetentionRunResult = {
      ran: true,
      deletedLogs,
      clickhouseDeletes,
      ...(deletedKeys === undefined ? {} : { deletedKeys }),
    };
    if (deletedLogs > 0 || clickhouseDeletes > 0 || (deletedKeys ?? 0) > 0)
      logger.info(result, 'retention: expired entries deleted');
    return result;
  }

  const poller = createPoller({
    name: 'retention',
    intervalMs,
    run: runOnce,
    onError: (error) => logger.error({ err: error }, 'retention run failed'),
  });

  return {
    runOnce,
    start: () => poller.start(),
    stop: () => poller.stop(),
  };
}
