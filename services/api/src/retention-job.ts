import type { ClickHouseClient } from '@clickhouse/client';
import { retentionCutoff, utcDay } from '@tern/domain';
import type pg from 'pg';

/**
 * Physical deletion of expired entries (SPEC §9). Visibility never depends on it: reads apply the
 * same cut-off at query time (`retentionCutoff`), so the job may run late or rarely. Postgres rows
 * go in small batches (short locks, no giant transaction); ClickHouse days go with a lightweight
 * `DELETE`. Per tenant with an override, then everyone else under the default.
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
}

export interface RetentionRunResult {
  /** False when another instance held the lock: nothing was done. */
  ran: boolean;
  /** Postgres `email_logs` rows deleted. */
  deletedLogs: number;
  /** ClickHouse DELETE statements issued (one per rule that had expired days). */
  clickhouseDeletes: number;
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

  /** Deletes in batches until a batch comes back short; every statement commits on its own. */
  async function deleteBatches(client: pg.PoolClient, where: string, params: unknown[]): Promise<number> {
    const limitParam = `$${params.length + 1}`;
    let deleted = 0;
    for (;;) {
      const result = await client.query(
        `DELETE FROM email_logs WHERE ctid IN (
           SELECT ctid FROM email_logs e WHERE ${where} LIMIT ${limitParam})`,
        [...params, batchSize],
      );
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < batchSize) return deleted;
    }
  }

  /** Issues the ClickHouse DELETE only when there is something to delete (a DELETE is a mutation). */
  async function deleteDays(where: string, params: Record<string, unknown>): Promise<number> {
    const probe = await opts.ch.query({
      query: `SELECT count() AS n FROM email_daily_v1 WHERE ${where}`,
      query_params: params,
      format: 'JSONEachRow',
    });
    const [row] = await probe.json<{ n: string | number }>();
    if (Number(row?.n ?? 0) === 0) return 0;
    await opts.ch.command({ query: `DELETE FROM email_daily_v1 WHERE ${where}`, query_params: params });
    return 1;
  }

  async function runLocked(client: pg.PoolClient): Promise<RetentionRunResult> {
    const at = opts.now();
    const { rows: overrides } = await client.query<{ tenant_id: string; retention_days: number }>(
      'SELECT tenant_id, retention_days FROM tenant_settings WHERE retention_days IS NOT NULL ORDER BY tenant_id',
    );
    let deletedLogs = 0;
    let clickhouseDeletes = 0;

    for (const { tenant_id: tenantId, retention_days: days } of overrides) {
      const cutoff = retentionCutoff(at, days);
      deletedLogs += await deleteBatches(client, 'e.tenant_id = $1 AND e.created_at < $2', [
        tenantId,
        cutoff,
      ]);
      clickhouseDeletes += await deleteDays('tenant_id = {tenantId:String} AND day < {cutoffDay:Date}', {
        tenantId,
        cutoffDay: utcDay(cutoff.getTime()),
      });
    }

    const cutoff = retentionCutoff(at, opts.defaultRetentionDays);
    // Tenants with an override were handled above, whatever their retention (longer or shorter).
    deletedLogs += await deleteBatches(
      client,
      `e.created_at < $1 AND NOT EXISTS (
         SELECT 1 FROM tenant_settings s WHERE s.tenant_id = e.tenant_id AND s.retention_days IS NOT NULL)`,
      [cutoff],
    );
    clickhouseDeletes += await deleteDays(
      'day < {cutoffDay:Date} AND NOT has({overridden:Array(String)}, tenant_id)',
      {
        cutoffDay: utcDay(cutoff.getTime()),
        overridden: overrides.map((o) => o.tenant_id),
      },
    );
    return { ran: true, deletedLogs, clickhouseDeletes };
  }

  async function runOnce(): Promise<RetentionRunResult> {
    // The whole run goes through one client: the advisory lock is held by its session (and an
    // embedded PGlite pool has a single connection, so a second client would wait forever).
    const client = await opts.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
        RETENTION_LOCK_KEY,
      ]);
      if (!rows[0]?.locked) return { ran: false, deletedLogs: 0, clickhouseDeletes: 0 };
      try {
        const result = await runLocked(client);
        if (result.deletedLogs > 0 || result.clickhouseDeletes > 0)
          logger.info(result, 'retention: expired entries deleted');
        return result;
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK_KEY]);
      }
    } finally {
      client.release();
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let started = false;

  function schedule(delayMs: number): void {
    timer = setTimeout(() => {
      running = runOnce()
        .catch((error: unknown) => logger.error({ err: error }, 'retention run failed'))
        .finally(() => {
          running = undefined;
          if (started) schedule(intervalMs);
        });
    }, delayMs);
    timer.unref();
  }

  return {
    runOnce,
    start() {
      if (started) return;
      started = true;
      schedule(0);
    },
    async stop() {
      started = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
