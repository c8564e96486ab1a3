import type { ClickHouseClient } from '@clickhouse/client';
import { retentionCutoff, utcDay } from '@tern/domain';
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
  async function tenantsWithLogs(client: pg.PoolClient): Promise<string[]> {
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

  async function runLocked(client: pg.PoolClient): Promise<RetentionRunResult> {
    const at = opts.now();
    const { rows: overrides } = await client.query<{ tenant_id: string; retention_days: number }>(
      'SELECT tenant_id, retention_days FROM tenant_settings WHERE retention_days IS NOT NULL ORDER BY tenant_id',
    );
    const overrideOf = new Map(overrides.map((o) => [o.tenant_id, o.retention_days]));
    let deletedLogs = 0;
    let clickhouseDeletes = 0;

    // Postgres, tenant by tenant: every delete is a range of the (tenant_id, created_at) index.
    for (const tenantId of await tenantsWithLogs(client)) {
      const cutoff = retentionCutoff(at, overrideOf.get(tenantId) ?? opts.defaultRetentionDays);
      deletedLogs += await deleteBatches(
        client,
        'e.tenant_id = $1 AND e.created_at IS NOT NULL AND e.created_at < $2',
        [tenantId, cutoff],
      );
    }

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
