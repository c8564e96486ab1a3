import { pruneEventLog } from '@tern/event-log';
import { createPoller } from '@tern/jobs';
import type { Logger } from '@tern/kernel';
import { pruneDeadLetters, pruneProcessed, pruneSoftBounces, SOFT_BOUNCE_WINDOW_MS } from '@tern/read-models';
import type pg from 'pg';

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

  /** Runs a delete of at most `limit` rows until one comes back short, yielding between them. */
  async function deleteInBatches(step: (limit: number) => Promise<number>): Promise<number> {
    let deleted = 0;
    for (;;) {
      const n = await step(batchSize);
      deleted += n;
      await new Promise((r) => setImmediate(r));
      if (n < batchSize) return deleted;
    }
  }

  async function runOnce(): Promise<PruneRunResult> {
    const cutoff = new Date(now().getTime() - opts.dedupWindowMs);
    const processedEvents = await deleteInBatches((limit) => pruneProcessed(opts.pool, cutoff, limit));
    let eventLog = 0;
    if (table !== undefined) {
      eventLog = await deleteInBatches((limit) => pruneEventLog(opts.pool, table, opts.group, cutoff, limit));
    }
    const deadLetters = await deleteInBatches((limit) => pruneDeadLetters(opts.pool, cutoff, limit));
    const softCutoff = new Date(now().getTime() - 2 * SOFT_BOUNCE_WINDOW_MS);
    const softBounces = await deleteInBatches((limit) => pruneSoftBounces(opts.pool, softCutoff, limit));
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
