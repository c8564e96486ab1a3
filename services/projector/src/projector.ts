import { randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { type DeliveryEvent, storableText } from '@tern/contracts';
import type { AnalyticsDelta, MailboxOf } from '@tern/domain';
import type { DeadLetter, EventBatch, EventLogConsumer, EventStream } from '@tern/event-log';
import { backoffMs, type Logger, silentLogger, withTransaction } from '@tern/kernel';
import { type Outbox, streamLogEvents, writeClickHouseDeadLetter } from '@tern/read-models';
import { classifyStoreError } from '@tern/stores';
import type pg from 'pg';
import { completeOutbox, type ShipFn, shipBatch, shipPendingOutbox } from './ch-sink.js';
import type { MailboxResolver } from './mailbox-resolver.js';
import { applyBatchToPostgres, deadLetterEvent } from './pg-sink.js';

export interface BatchStats {
  records: number;
  applied: number;
  duplicates: number;
  deadLettered: number;
  durationMs: number;
}

export interface ProjectorOptions {
  pool: pg.Pool;
  ch: ClickHouseClient;
  log: EventStream;
  /** Consumer group; a rebuild uses a new one. */
  group: string;
  maxBatchSize?: number;
  maxWaitMs?: number;
  logger?: Logger;
  onBatch?: (stats: BatchStats) => void;
  newBatchId?: () => string;
  /** Backoff of transient store errors: first and largest wait. */
  retry?: { initialMs: number; maxMs: number };
  /** The recipients' mailbox providers (SPEC §26); absent: every email is `other`. */
  mailboxes?: MailboxResolver;
  /** No progress for this long while the log has a lag → `stalled()` names why (`/ready` 503). Default 60 s. */
  stallAfterMs?: number;
}

export interface Projector {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** One batch through both sinks; exported for tests and rebuilds. */
  processBatch(batch: EventBatch): Promise<BatchStats>;
  lag(): Promise<number>;
  /** Why the projector is stalled (no progress for `stallAfterMs` while lag > 0), or null. */
  stalled(): Promise<string | null>;
}

/** The store refused the data itself: retrying the same data can never succeed (`classifyStoreError`). */
const isDataError = (error: unknown): boolean => classifyStoreError(error) === 'data';

const reasonOf = (store: string, error: unknown): string => {
  const e = error as { code?: unknown; message?: unknown };
  return storableText(
    `${store} refused it${typeof e.code === 'string' ? ` (${e.code})` : ''}: ${String(e.message ?? error)}`,
  );
};

/**
 * Ships one outbox batch; when ClickHouse refuses its data (not its availability), each row is
 * shipped alone under its own dedup token and the refused rows become dead letters, so one bad
 * row never blocks the others (issue 9, item 1). Retried after a crash, the same tokens dedup.
 */
export function isolatingShip(pool: pg.Pool): ShipFn {
  return async (ch, batchId, rows, dimRows, dimTables) => {
    try {
      await shipBatch(ch, batchId, rows, dimRows, dimTables);
    } catch (error) {
      if (!isDataError(error) || rows.length + (dimRows?.length ?? 0) === 0) throw error;
      for (const [i, row] of (dimRows ?? []).entries()) {
        try {
          await shipBatch(ch, `${batchId}:d${i}`, [], [row], dimTables);
        } catch (rowError) {
          if (!isDataError(rowError)) throw rowError;
          await writeClickHouseDeadLetter(
            pool,
            storableText(JSON.stringify(row)),
            reasonOf('ClickHouse', rowError),
          );
        }
      }
      for (const [i, row] of rows.entries()) {
        try {
          await shipBatch(ch, `${batchId}:${i}`, [row]);
        } catch (rowError) {
          if (!isDataError(rowError)) throw rowError;
          await writeClickHouseDeadLetter(
            pool,
            storableText(JSON.stringify(row satisfies AnalyticsDelta)),
            reasonOf('ClickHouse', rowError),
          );
        }
      }
    }
  };
}

interface PgStepResult {
  applied: number;
  duplicates: number;
  deadLettered: number;
  outboxes: Outbox[];
}

/**
 * Applies events to Postgres; when Postgres refuses the data of the batch (class 22/23), the
 * batch is split in halves until the refused event stands alone, which is dead-lettered with
 * the reason (and its id claimed, so a redelivery is a known duplicate). Every good event of
 * the batch is applied; a transient error is thrown for the caller's retry.
 */
export async function applyIsolating(
  pool: pg.Pool,
  events: readonly DeliveryEvent[],
  dead: readonly DeadLetter[],
  newBatchId: () => string,
  mailboxOf?: MailboxOf,
): Promise<PgStepResult> {
  try {
    const r = await applyBatchToPostgres(pool, events, dead, newBatchId, mailboxOf);
    return {
      applied: r.applied,
      duplicates: r.duplicates,
      deadLettered: dead.length,
      outboxes: r.outbox ? [r.outbox] : [],
    };
  } catch (error) {
    if (!isDataError(error)) throw error;
    if (events.length <= 1) {
      const event = events[0];
      const letters = event
        ? [...dead, { payload: storableText(JSON.stringify(event)), reason: reasonOf('Postgres', error) }]
        : dead.map((d) => ({ payload: storableText(d.payload), reason: storableText(d.reason) }));
      await deadLetterEvent(pool, event, letters);
      return { applied: 0, duplicates: 0, deadLettered: letters.length, outboxes: [] };
    }
    const half = Math.ceil(events.length / 2);
    const a = await applyIsolating(pool, events.slice(0, half), dead, newBatchId, mailboxOf);
    const b = await applyIsolating(pool, events.slice(half), [], newBatchId, mailboxOf);
    return {
      applied: a.applied + b.applied,
      duplicates: a.duplicates + b.duplicates,
      deadLettered: a.deadLettered + b.deadLettered,
      outboxes: [...a.outboxes, ...b.outboxes],
    };
  }
}

/**
 * The projector: consumes the log in batches and folds each batch into Postgres (rows and
 * outbox in one transaction), then ships the outbox to ClickHouse; the log commits the batch
 * only after both. Store errors are retried with backoff; a good event is never skipped.
 */
export function createProjector(opts: ProjectorOptions): Projector {
  const logger = opts.logger ?? silentLogger;
  const newBatchId = opts.newBatchId ?? randomUUID;
  const retry = opts.retry ?? { initialMs: 100, maxMs: 30_000 };
  const ship = isolatingShip(opts.pool);
  const stallAfterMs = opts.stallAfterMs ?? 60_000;
  let consumer: EventLogConsumer | null = null;
  let stopping = false;
  let batchesSinceSweep = 0;
  // Progress bookkeeping for `stalled()`: the last batch done (or lag seen at 0), when the
  // current batch began failing, when a positive lag was first seen without progress since.
  let lastProgressAt = Date.now();
  let failingSince: number | null = null;
  let lastError = '';
  let lagSeenSince: number | null = null;

  async function processBatch({
    events,
    deadLetters,
    domainEvents,
    inboundEvents,
  }: EventBatch): Promise<BatchStats> {
    const started = performance.now();
    const mailboxOf = await opts.mailboxes?.prepare(events);
    const result = await applyIsolating(opts.pool, events, deadLetters, newBatchId, mailboxOf);
    for (const outbox of result.outboxes) {
      await ship(opts.ch, outbox.batchId, outbox.rows, outbox.dimRows, outbox.dimTables);
      await completeOutbox(opts.pool, outbox.batchId, outbox.rows, outbox.dimRows);
    }
    // Domain checks and received mail are no email's facts (the fold never sees them); they join the
    // event stream after the batch's delivery events (SPEC §25). A batch delivered again skips them.
    const others = [...(domainEvents ?? []), ...(inboundEvents ?? [])];
    if (others.length > 0) await withTransaction(opts.pool, (client) => streamLogEvents(client, others));
    return {
      records: events.length + deadLetters.length,
      applied: result.applied,
      duplicates: result.duplicates,
      deadLettered: result.deadLettered,
      durationMs: performance.now() - started,
    };
  }

  /**
   * Runs `fn` until it succeeds while the only errors are of an unavailable store (retried with
   * backoff here). Refused data never reaches this point (`applyIsolating` dead-letters it); any
   * other error is a bug: it is logged and thrown, the log delivers the batch again after its
   * own backoff, and `stalled()` names it meanwhile.
   */
  async function withRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        failingSince ??= Date.now();
        lastError = `${(error as { code?: unknown }).code ?? ''} ${(error as Error).message ?? ''}`
          .trim()
          .slice(0, 200);
        if (stopping) throw error;
        if (classifyStoreError(error) !== 'unavailable') {
          logger.error(
            { err: error, attempt },
            `${what} failed: not a store outage; redelivered after a backoff`,
          );
          throw error;
        }
        const wait = backoffMs(attempt, { initialMs: retry.initialMs, maxMs: retry.maxMs });
        logger.warn(
          { err: error, attempt, retryInMs: wait },
          `${what} failed: a store is unavailable; retrying`,
        );
        await new Promise((r) => setTimeout(r, wait * (0.5 + Math.random() / 2)));
      }
    }
  }

  async function handle(batch: EventBatch): Promise<void> {
    // Batches a crashed run left in the outbox are shipped before new work (and then now and then).
    if (batchesSinceSweep++ % 100 === 0) {
      await withRetry('outbox sweep', () =>
        shipPendingOutbox(opts.pool, opts.ch, { olderThanMs: 10_000, ship }),
      );
    }
    let attempt = 0;
    const stats = await withRetry('projection batch', async () => {
      // A failed attempt may have committed Postgres and left its outbox row unshipped: its events
      // are now known duplicates, so only the outbox still carries their figures.
      if (attempt++ > 0) await shipPendingOutbox(opts.pool, opts.ch, { ship });
      return processBatch(batch);
    });
    failingSince = null;
    lastProgressAt = Date.now();
    if (stats.deadLettered > 0) logger.warn({ count: stats.deadLettered }, 'records sent to dead_letters');
    opts.onBatch?.(stats);
  }

  return {
    processBatch,
    async start() {
      stopping = false;
      lastProgressAt = Date.now();
      await withRetry('outbox recovery', () => shipPendingOutbox(opts.pool, opts.ch, { ship }));
      consumer = await opts.log.consume({
        group: opts.group,
        fromBeginning: true,
        maxBatchSize: opts.maxBatchSize ?? 10_000,
        maxWaitMs: opts.maxWaitMs ?? 100,
        handle,
      });
      logger.info({ group: opts.group }, 'projector started');
    },
    async stop() {
      stopping = true;
      await consumer?.stop();
      consumer = null;
    },
    lag: () => opts.log.lag(opts.group),
    async stalled() {
      const now = Date.now();
      if (failingSince !== null && now - failingSince > stallAfterMs) {
        return `projector stalled: a batch has failed for ${((now - failingSince) / 1000).toFixed(1)} s (${lastError})`;
      }
      const lag = await opts.log.lag(opts.group);
      if (lag === 0) {
        lagSeenSince = null;
        lastProgressAt = now;
        return null;
      }
      lagSeenSince ??= now;
      const idleFor = now - Math.max(lastProgressAt, lagSeenSince);
      return idleFor > stallAfterMs
        ? `projector stalled: no progress for ${(idleFor / 1000).toFixed(1)} s with lag ${lag}`
        : null;
    },
  };
}
