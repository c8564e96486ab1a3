import type { ClickHouseClient } from '@clickhouse/client';
import { retentionCutoff, utcDay } from '@tern/domain';
import { createPoller, type Logger, silentLogger, withTransaction } from '@tern/jobs';
import type { Keyring } from '@tern/privacy';
import type pg from 'pg';

/**
 * Physical deletion of expired entries (SPEC §9). Visibility never depends on it: reads apply the
 * same cut-off at query time (`retentionCutoff`), so the job may run late or rarely. Postgres rows
 * go tenant by tenant in small batches (short locks, no giant transaction): an expired email's log
 * row with its content in every other table (SPEC §14: "retention deletes old content the same
 * way" as erasure), then a sweep of content rows older than the cut-off whose log row is already
 * gone; ClickHouse days go with a lightweight `DELETE`, per overriding tenant, then everyone else
 * under the default.
 */

export interface RetentionJobOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  now: () => Date;
  defaultRetentionDays: number;
  /** Rows per DELETE statement. Default 5000. */
  batchSize?: number;
  /** Pause between runs when started. Default 1 h. */
  intervalMs?: number;
  logger?: Logger;
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
  /**
   * Rows of the expired emails' content in the other tables (`CONTENT_TABLES`: timeline, send,
   * sandbox message, webhook deliveries), deleted with their log rows or by the sweep.
   */
  deletedContent: number;
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

/**
 * The tables besides `email_logs` that hold an email's content, by email id: the ones erasure
 * scrubs for an address (services/api/src/contacts/erase.ts) that are keyed by an email. Erasure's
 * other tables are the address's own (contact, suppression, unsubscribe records, data keys — the
 * keys go below, by month), and dead letters carry no email id. `at` dates a row for the sweep of
 * rows whose log row is already gone (indexed with the tenant, migration 0090); `only` keeps what
 * another service still needs.
 *
 * Why a deleted send cannot be pending: `outgoing_emails` goes awaiting_log → pending ⇄ sending →
 * done, or awaiting_log|pending → cancelling → cancelled. `done` and `cancelled` are final: every
 * write of the sender and of cancel names the state it leaves (services/sender/src/sender.ts,
 * services/api/src/emails/store.ts), never these two, so a row the statement reads as final stays
 * final, and nothing claims or reads it again for sending. An email expires by its `created_at`
 * (the queued time) while its send may fall due up to 30 days later (`scheduledAt`) or retry for
 * about an hour, and a retention may be one day: so an email whose send is not final keeps every
 * row (its log row too, `SEND_NOT_FINAL`) until the first run after the send ends. Its outcome
 * still folds into that row meanwhile; what it adds to the counters and rollups of its expired day
 * is deleted by the next run, like the rest of that day.
 */
const CONTENT_TABLES = [
  { table: 'email_events', id: 'email_id', at: 'occurred_at', only: null },
  { table: 'outgoing_emails', id: 'id', at: 'created_at', only: "x.state IN ('done', 'cancelled')" },
  // A sandbox message is read again only by a retry of its send (`delayed@`), which is not final.
  { table: 'sandbox_messages', id: 'email_id', at: 'created_at', only: null },
  // A pending delivery is the dispatcher's retry queue; finished ones it also sweeps itself after
  // RETENTION_DAYS, but only this job knows a tenant's shorter override.
  { table: 'webhook_deliveries', id: 'email_id', at: 'created_at', only: "x.status <> 'pending'" },
  // The message ids provider notifications are matched by (SPEC §21): none for a deleted email.
  { table: 'provider_messages', id: 'email_id', at: 'sent_at', only: null },
] as const;
type ContentTable = (typeof CONTENT_TABLES)[number];
const andOnly = (t: ContentTable) => (t.only === null ? '' : `AND ${t.only}`);

/** True for an email (`<alias>.tenant_id`, `<alias>.<id>`) whose send the sender is not done with. */
const SEND_NOT_FINAL = (alias: string, id: string) =>
  `EXISTS (SELECT 1 FROM outgoing_emails o WHERE o.tenant_id = ${alias}.tenant_id AND o.id = ${alias}.${id}
              AND o.state NOT IN ('done', 'cancelled'))`;

/**
 * True for a visible email (created at or after the cut-off `$2`): a probe of the log's primary key
 * per row. A scalar subquery rather than `NOT EXISTS`, which the planner may turn into a hash of
 * every visible entry of the tenant, for each batch.
 */
const VISIBLE = (alias: string, id: string) =>
  `coalesce((SELECT l.created_at >= $2 FROM email_logs l
              WHERE l.tenant_id = ${alias}.tenant_id AND l.id = ${alias}.${id}), false)`;

export function createRetentionJob(opts: RetentionJobOptions): RetentionJob {
  const batchSize = opts.batchSize ?? 5000;
  const intervalMs = opts.intervalMs ?? 3_600_000;
  const logger = opts.logger ?? silentLogger;
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
    const result = await withTransaction(opts.pool, async (client) => {
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_xact_lock($1) AS locked',
        [RETENTION_LOCK_KEY],
      );
      return rows[0]?.locked ? await fn(client) : null;
    });
    await new Promise((r) => setImmediate(r));
    return result;
  }

  /**
   * Runs a batch statement (`$3` its limit) until a batch comes back short; every batch is its own
   * transaction. The statement answers one row: `n`, the rows of the batch, and `content`, the
   * content rows deleted with them.
   */
  async function deleteBatches(
    sql: string,
    tenantId: string,
    cutoff: Date,
  ): Promise<{ rows: number; content: number }> {
    const deleted = { rows: 0, content: 0 };
    for (;;) {
      const batch = await lockedStep(async (client) => {
        const { rows } = await client.query<{ n: number; content: number }>(sql, [
          tenantId,
          cutoff,
          batchSize,
        ]);
        return rows[0] ?? { n: 0, content: 0 };
      });
      // Another instance took the lock: it carries on (the deletes are idempotent).
      if (batch === null) return deleted;
      deleted.rows += batch.n;
      deleted.content += batch.content;
      if (batch.n < batchSize) return deleted;
    }
  }

  /**
   * A batch of a tenant's expired emails (`$1` tenant, `$2` cut-off, `$3` limit): their log rows
   * and, in the same statement, their rows in every content table, found by email id through the
   * `gone` rows, so no moment shows one without the other. The log rows are a range of the
   * `(tenant_id, created_at)` index; the ids go to each content delete as an array, an index probe
   * per id (led by `(tenant_id, email id)`) whatever the planner guesses of the batch's size, never
   * a scan of the table. An event the projector commits for an email while this statement deletes
   * it is not in the statement's snapshot: the sweep takes it once older than the cut-off.
   */
  const expiredEmailsSql = `
    WITH gone AS (
      DELETE FROM email_logs WHERE ctid IN (
        SELECT e.ctid FROM email_logs e
         WHERE e.tenant_id = $1 AND e.created_at IS NOT NULL AND e.created_at < $2
           AND NOT ${SEND_NOT_FINAL('e', 'id')}
         LIMIT $3)
      RETURNING id
    ),
    ${CONTENT_TABLES.map(
      (t, i) => `c${i} AS (
      DELETE FROM ${t.table} x
       WHERE x.tenant_id = $1 AND x.${t.id} = ANY (ARRAY(SELECT id FROM gone)) ${andOnly(t)}
      RETURNING 1
    )`,
    ).join(',\n    ')}
    SELECT (SELECT count(*) FROM gone)::int AS n,
           (${CONTENT_TABLES.map((_, i) => `(SELECT count(*) FROM c${i})`).join(' + ')})::int AS content`;

  /**
   * A batch of a content table's rows of a tenant (`$1`) older than its cut-off (`$2`) whose log
   * row is already gone: deleted by an earlier version of this job, which left them (and took the
   * log rows of sends still due, whose outcome came later), or written after their email was
   * deleted (a late open or complaint). Never a visible email's row (an event posted from outside
   * may predate its email's `createdAt`), nor a send's that is not final. Run on every run: after
   * the first one it only meets such late rows, and a tenant without any costs one index probe.
   */
  const orphansSql = (t: ContentTable) => `
    WITH gone AS (
      DELETE FROM ${t.table} WHERE ctid IN (
        SELECT x.ctid FROM ${t.table} x
         WHERE x.tenant_id = $1 AND x.${t.at} < $2 ${andOnly(t)}
           AND NOT ${VISIBLE('x', t.id)}
           ${t.table === 'outgoing_emails' ? '' : `AND NOT ${SEND_NOT_FINAL('x', t.id)}`}
         LIMIT $3)
      RETURNING 1
    )
    SELECT count(*)::int AS n, count(*)::int AS content FROM gone`;

  /**
   * Issues the ClickHouse DELETE only when there is something to delete (a DELETE is a mutation),
   * in each rollup: every email's, and the per-project one (SPEC §16). Counts DELETEs issued.
   */
  async function deleteDays(where: string, params: Record<string, unknown>): Promise<number> {
    let issued = 0;
    for (const table of ['email_daily_v2', 'email_project_daily_v1', 'email_machine_daily_v1']) {
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
   * Tenants that have rows in `table` matching `where` (on alias `x`), by a loose index scan of an
   * index led by `tenant_id` with that predicate (`(tenant_id, created_at)` of 0001 for the log
   * rows, 0090's for the content tables): one index probe per tenant instead of a scan of the table.
   */
  async function tenantsOf(client: pg.PoolClient, table: string, where: string): Promise<string[]> {
    const { rows } = await client.query<{ tenant_id: string }>(
      `WITH RECURSIVE t(tenant_id) AS (
         SELECT min(x.tenant_id) FROM ${table} x WHERE ${where}
         UNION ALL
         SELECT (SELECT min(x.tenant_id) FROM ${table} x WHERE ${where} AND x.tenant_id > t.tenant_id)
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
      const tenants = await tenantsOf(client, 'email_logs', 'x.created_at IS NOT NULL');
      const sweeps: { t: ContentTable; tenants: string[] }[] = [];
      for (const t of CONTENT_TABLES)
        sweeps.push({ t, tenants: await tenantsOf(client, t.table, t.only ?? 'true') });
      return { overrides, tenants, sweeps };
    });
    if (plan === null) return { ran: false, deletedLogs: 0, deletedContent: 0, clickhouseDeletes: 0 };
    const { overrides, tenants, sweeps } = plan;
    const overrideOf = new Map(overrides.map((o) => [o.tenant_id, o.retention_days]));
    const cutoffOf = (tenantId: string) =>
      retentionCutoff(at, overrideOf.get(tenantId) ?? opts.defaultRetentionDays);
    let deletedLogs = 0;
    let deletedContent = 0;
    let clickhouseDeletes = 0;

    // Postgres, tenant by tenant: every delete is a range of a (tenant_id, time) index, a batch
    // per transaction. Another instance taking over mid-run is harmless (deletes are idempotent).
    for (const tenantId of tenants) {
      const deleted = await deleteBatches(expiredEmailsSql, tenantId, cutoffOf(tenantId));
      deletedLogs += deleted.rows;
      deletedContent += deleted.content;
    }
    // Then what the expired emails left behind in each content table (after the emails above, so
    // it only meets rows whose log row was already gone).
    for (const { t, tenants: withRows } of sweeps) {
      const sql = orphansSql(t);
      for (const tenantId of withRows)
        deletedContent += (await deleteBatches(sql, tenantId, cutoffOf(tenantId))).content;
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
      deletedContent,
      clickhouseDeletes,
      ...(deletedKeys === undefined ? {} : { deletedKeys }),
    };
    if (deletedLogs > 0 || deletedContent > 0 || clickhouseDeletes > 0 || (deletedKeys ?? 0) > 0)
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
