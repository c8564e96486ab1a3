import type { Logger } from '@tern/jobs';
import { createPoller } from '@tern/jobs';
import type pg from 'pg';
import { SOFT_BOUNCE_WINDOW_MS } from './pg-sink.js';

/**
 * Bounds the growth of the projector's bookkeeping (issue 9, item 7), keeping the dedup
 * guarantee for a stated window (docs/reliability.md "Deduplication window"):
 *
 * - `processed_events`: the id of a dead-lettered event is remembered for `dedupWindowMs` after
 *   it was claimed (folded ids are claimed by their timeline rows, which retention removes with
 *   their email: migration 0095).
 * - `dead_letters`: kept for the same window, then deleted. A dead letter holds the record as the
 *   projector received it, opened (an `email.queued` names its recipient and subject in clear),
 *   and names no tenant the retention job could go by: the window bounds how long it keeps them.
 * - the Postgres-table event log (`eventLogTable`, when that log is used): a record is deleted
 *   once the projector group has committed past it AND it is older than the same window, so a
 *   record is never pruned before the projector applied it, and a redelivery of it (a crash
 *   before the commit) always finds its id still claimed.
 *
 * Every DELETE is one small autocommit statement of at most `batchSize` rows, and the job
 * yields between them, so an embedded single-connection PGlite keeps serving reads.
 */
export interface PruneJobOptions {
  pool: pg.Pool;
  /** The projector's consumer group: its committed offset bounds what the log may lose. */
  group: string;
  dedupWindowMs: number;
  /** The Postgres-table event log to prune; undefined with Kafka (topic retention does it). */
  eventLogTable?: string | undefined;
  now?: () => Date;
  batchSize?: number;
  /** Pause between runs when started. Default 1 h. */
  intervalMs?: number;
  logger?: Logger;
}

export interface PruneRunResult {
  processedEvents: number;
  eventLog: number;
  deadLetters: number;
  /** Rows of `soft_bounces` past twice the soft-bounce window (SPEC §21; late events keep a margin). */
  softBounces: number;
}

export interface PruneJob {
  runOnce(): Promise<PruneRunResult>;
  start(): void;
  stop(): Promise<void>;
}

export function createPruneJob(opts: PruneJobOptions): PruneJob {
  const batchSize = opts.batchSize ?? 5000;
  const intervalMs = opts.intervalMs ?? 3_600_000;
  const now = opts.now ?? (() => new Date());
  if (!(opts.dedupWindowMs > 0)) throw new Error('dedupWindowMs must be > 0');
  const table = opts.eventLogTable;
  if (table !== undefined && !/^[a-z_][a-z0-9_]{0,40}$/.test(table))
    throw new Error(`invalid table: ${table}`);

  async function deleteInBatches(sql: string, params: unknown[]): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await opts.pool.query(sql, [...params, batchSize]);
      deleted += result.rowCount ?? 0;
      await new Promise((r) => setImmediate(r));
      if ((result.rowCount ?? 0) < batchSize) return deleted;
    }
  }

  async function runOnce(): Promise<PruneRunResult> {
    const cutoff = new Date(now().getTime() - opts.dedupWindowMs);
    const processedEvents = await deleteInBatches(
      `DELETE FROM processed_events WHERE ctid IN (
         SELECT ctid FROM processed_events WHERE processed_at < $1 LIMIT $2)`,
      [cutoff],
    );
    let eventLog = 0;
    if (table !== undefined) {
      eventLog = await deleteInBatches(
        `DELETE FROM ${table} WHERE seq IN (
           SELECT seq FROM ${table}
            WHERE seq < (SELECT next_seq FROM ${table}_offsets WHERE group_id = $1)
              AND appended_at < $2
            ORDER BY seq LIMIT $3)`,
        [opts.group, cutoff],
      );
    }
    const deadLetters = await deleteInBatches(
      `DELETE FROM dead_letters WHERE id IN (
         SELECT id FROM dead_letters WHERE created_at < $1 ORDER BY id LIMIT $2)`,
      [cutoff],
    );
    const softBounces = await deleteInBatches(
      `DELETE FROM soft_bounces WHERE ctid IN (
         SELECT ctid FROM soft_bounces WHERE occurred_at < $1 LIMIT $2)`,
      [new Date(now().getTime() - 2 * SOFT_BOUNCE_WINDOW_MS)],
    );
    const result = { processedEvents, eventLog, deadLetters, softBounces };
    if (processedEvents > 0 || eventLog > 0 || deadLetters > 0 || softBounces > 0)
      opts.logger?.info(result, 'pruned past the dedup window');
    return result;
  }

  const poller = createPoller({
    name: 'prune',
    intervalMs,
    run: runOnce,
    onError: (error) => opts.logger?.error({ err: error }, 'prune run failed'),
  });
  return {
    runOnce,
    start: () => poller.start(),
    stop: () => poller.stop(),
  };
}
