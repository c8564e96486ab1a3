import type { ClickHouseClient } from '@clickhouse/client';
import { DAY_MS, retentionCutoff } from '@tern/domain';
import { expireDmarc, expireInbound } from '@tern/inbound';
import { createPoller } from '@tern/jobs';
import { type Logger, silentLogger, withTransaction } from '@tern/kernel';
import type { Keyring } from '@tern/privacy';
import {
  CH_READ_MODELS,
  type EmailContentTable,
  expireEventStream,
  LOG_DAYS_AHEAD,
  logExpirySql,
  PG_READ_MODELS,
  type TenantScope,
} from '@tern/read-models';
import { ATTACHMENT_CONTENT, OUTGOING_CONTENT, SANDBOX_CONTENT, sendNotFinalSql } from '@tern/sending';
import { retentionOverrides } from '@tern/tenant-settings';
import { WEBHOOK_DELIVERY_CONTENT } from '@tern/webhooks';
import type pg from 'pg';

/**
 * Physical deletion of expired entries (SPEC §9). Visibility never depends on it: reads apply the
 * same cut-off at query time (`retentionCutoff`), so the job may run late or rarely. It names no
 * table: each owner says what expires (the read models of packages/read-models, the sending
 * side's and the webhook deliveries' content tables, the keyring's keys). Postgres rows
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
  /** EVENT_STREAM_DAYS (SPEC §25): the event stream keeps no event longer, whatever the retention. Default 30. */
  eventStreamDays?: number;
  /**
   * Days of the log made ahead (migration 0560), from the day after `now`: a job stopped for fewer
   * days loses nothing (the rows of a day with no partition go to the DEFAULT, deleted row by row). Default `LOG_DAYS_AHEAD` (3).
   */
  logDaysAhead?: number;
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
  /** Postgres `email_logs` rows deleted (those of the dropped days included). */
  deletedLogs: number;
  /** Day partitions of `email_logs` dropped whole (every email in them expired). */
  droppedLogDays: number;
  /**
   * Rows of the expired emails' content in the other tables (`CONTENT_TABLES`: timeline, send,
   * sandbox message, webhook deliveries, attachments), deleted with their log rows or by the sweep.
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
 * The tables besides `email_logs` that hold an email's content, by email id, each declared by its
 * owner: the read models' (timeline, provider message ids), the sending side's (`outgoing_emails`,
 * `sandbox_messages`: packages/sending) and the webhook deliveries (packages/webhooks). `at` dates
 * a row for the sweep of rows whose log row is already gone (indexed with the tenant, migration
 * 0090); `only` keeps what another service still needs.
 *
 * An email expires by its `created_at` (the queued time) while its send may fall due up to 30 days
 * later (`scheduledAt`) or retry for about an hour, and a retention may be one day: so an email
 * whose send is not final (`sendNotFinalSql`, packages/sending) keeps every row (its log row too)
 * until the first run after the send ends. Its outcome still folds into that row meanwhile; what
 * it adds to the counters and rollups of its expired day is deleted by the next run, like the rest
 * of that day.
 */
const CONTENT_TABLES: readonly EmailContentTable[] = [
  ...PG_READ_MODELS.flatMap((m) => m.emailContent ?? []),
  OUTGOING_CONTENT,
  SANDBOX_CONTENT,
  ATTACHMENT_CONTENT,
  WEBHOOK_DELIVERY_CONTENT,
];
const EXPIRY = logExpirySql(CONTENT_TABLES, sendNotFinalSql, OUTGOING_CONTENT.table);

/** The tenants a loose-index-scan statement (`SELECT tenant_id`) answers. */
async function tenantsOf(client: pg.PoolClient, sql: string): Promise<string[]> {
  const { rows } = await client.query<{ tenant_id: string }>(sql);
  return rows.map((r) => r.tenant_id);
}

export function createRetentionJob(opts: RetentionJobOptions): RetentionJob {
  const batchSize = opts.batchSize ?? 5000;
  const daysAhead = opts.logDaysAhead ?? LOG_DAYS_AHEAD;
  const intervalMs = opts.intervalMs ?? 3_600_000;
  const logger = opts.logger ?? silentLogger;
  if (!(Number.isInteger(batchSize) && batchSize >= 1))
    throw new Error('batchSize must be a positive integer');
  if (!(Number.isInteger(daysAhead) && daysAhead >= 1))
    throw new Error('logDaysAhead must be a positive integer');
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
   * content rows deleted with them. With `pick` (`$3` its limit, answering `id`s), the batch's ids
   * are picked first in the same transaction and the statement's `$3` is them.
   */
  async function deleteBatches(
    sql: string,
    tenantId: string,
    cutoff: Date,
    pick?: string,
  ): Promise<{ rows: number; content: number }> {
    const deleted = { rows: 0, content: 0 };
    for (;;) {
      const batch = await lockedStep(async (client) => {
        let third: number | string[] = batchSize;
        if (pick !== undefined) {
          third = (await client.query<{ id: string }>(pick, [tenantId, cutoff, batchSize])).rows.map(
            (r) => r.id,
          );
          if (third.length === 0) return { n: 0, content: 0, full: false };
        }
        const { rows } = await client.query<{ n: number; content: number }>(sql, [tenantId, cutoff, third]);
        const r = rows[0] ?? { n: 0, content: 0 };
        // A picked batch that deleted nothing (each changed since) ends the tenant's run too.
        return {
          ...r,
          full: Array.isArray(third) ? third.length === batchSize && r.n > 0 : r.n >= batchSize,
        };
      });
      // Another instance took the lock: it carries on (the deletes are idempotent).
      if (batch === null) return deleted;
      deleted.rows += batch.n;
      deleted.content += batch.content;
      if (!batch.full) return deleted;
    }
  }

  /** A step of the log's days: its failure is logged (code and message: no row's content) and the run goes on. */
  async function daysStep<T>(what: string, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      const { code, message } = err as { code?: string; message?: string };
      logger.warn({ code, message }, `retention: ${what}; the next run tries again`);
      return null;
    }
  }

  async function runOnce(): Promise<RetentionRunResult> {
    const at = opts.now();
    // The first step claims the run: when another instance holds the lock, nothing is done.
    const plan = await lockedStep(async (client) => {
      const overrides = await retentionOverrides(client);
      const tenants = await tenantsOf(client, EXPIRY.tenants);
      const sweeps: { t: EmailContentTable; tenants: string[] }[] = [];
      for (const t of CONTENT_TABLES)
        sweeps.push({ t, tenants: await tenantsOf(client, EXPIRY.tenantsOf(t)) });
      return { overrides, tenants, sweeps };
    });
    if (plan === null)
      return { ran: false, deletedLogs: 0, droppedLogDays: 0, deletedContent: 0, clickhouseDeletes: 0 };
    const { overrides, tenants, sweeps } = plan;
    const overrideOf = new Map(overrides.map((o) => [o.tenant_id, o.retention_days]));
    const cutoffOf = (tenantId: string) =>
      retentionCutoff(at, overrideOf.get(tenantId) ?? opts.defaultRetentionDays);
    let deletedLogs = 0;
    let droppedLogDays = 0;
    let deletedContent = 0;
    let clickhouseDeletes = 0;

    // The log's days (migration 0560): the next ones made ahead; a day whose every email expired
    // goes whole, before the row-by-row deletes below (its emails' content rows go by the sweep).
    // Either failing (a lock not had within its timeout) leaves the rest of the run to go on: a
    // day not made sends its rows to the DEFAULT, a day not dropped is deleted row by row.
    for (const model of PG_READ_MODELS) {
      const days = model.days;
      if (days === undefined) continue;
      await daysStep('the days ahead were not made', () =>
        days.ensure(opts.pool, new Date(at.getTime() + DAY_MS), daysAhead),
      );
      const gone = await daysStep('an expired day was not dropped', () =>
        days.dropExpired(opts.pool, at, { cutoffOf, sendNotFinal: sendNotFinalSql }),
      );
      droppedLogDays += gone?.dropped.length ?? 0;
      deletedLogs += gone?.rows ?? 0;
    }

    // Postgres, tenant by tenant: every delete is a range of a (tenant_id, time) index, a batch
    // per transaction. Another instance taking over mid-run is harmless (deletes are idempotent).
    for (const tenantId of tenants) {
      const deleted = await deleteBatches(
        EXPIRY.expiredEmails,
        tenantId,
        cutoffOf(tenantId),
        EXPIRY.expiredIds,
      );
      deletedLogs += deleted.rows;
      deletedContent += deleted.content;
    }
    // Then what the expired emails left behind in each content table (after the emails above, so
    // it only meets rows whose log row was already gone).
    for (const { t, tenants: withRows } of sweeps) {
      const sql = EXPIRY.orphans(t);
      for (const tenantId of withRows)
        deletedContent += (await deleteBatches(sql, tenantId, cutoffOf(tenantId))).content;
    }

    // The read models' own expiry (the log counters: the days and hours before the cut-off day;
    // the ClickHouse rollups: the days before it), a step per overriding tenant and one for
    // everybody else. The logs query and analytics never read them (they apply the cut-off), so
    // this is clean-up only.
    const scopes: { scope: TenantScope; cutoff: Date }[] = [
      ...overrides.map((o) => ({
        scope: { tenantId: o.tenant_id },
        cutoff: retentionCutoff(at, o.retention_days),
      })),
      {
        scope: { allBut: overrides.map((o) => o.tenant_id) },
        cutoff: retentionCutoff(at, opts.defaultRetentionDays),
      },
    ];
    for (const model of PG_READ_MODELS) {
      const expire = model.expire;
      if (expire === undefined) continue;
      for (const { scope, cutoff } of scopes) await lockedStep((client) => expire(client, scope, cutoff));
    }
    // The event stream keeps EVENT_STREAM_DAYS at most (reads apply the same cut-off).
    const streamCutoff = new Date(at.getTime() - (opts.eventStreamDays ?? 30) * 86_400_000);
    await lockedStep((client) => expireEventStream(client, { allBut: [] }, streamCutoff));
    for (const model of CH_READ_MODELS)
      for (const { scope, cutoff } of scopes) clickhouseDeletes += await model.expire(opts.ch, scope, cutoff);
    // Received mail (SPEC §24) expires by its arrival, like an email by its queued time; so do the
    // DMARC aggregate reports (SPEC §26) read from it, with their records.
    for (const { scope, cutoff } of scopes) {
      const of = 'tenantId' in scope ? { tenantId: scope.tenantId } : { except: scope.allBut };
      deletedContent += (await lockedStep((client) => expireInbound(client, cutoff, of))) ?? 0;
      deletedContent += (await lockedStep((client) => expireDmarc(client, cutoff, of))) ?? 0;
    }
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
      droppedLogDays,
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
