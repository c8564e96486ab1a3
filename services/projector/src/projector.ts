import { randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import type { ConsumedRecord, EventLog, EventLogConsumer } from '@tern/event-log';
import type pg from 'pg';
import { shipBatch, shipPendingOutbox } from './ch-sink.js';
import { applyBatchToPostgres, type DeadLetter } from './pg-sink.js';

export interface ProjectorLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

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
  log: EventLog;
  /** Consumer group; a rebuild uses a new one. */
  group: string;
  maxBatchSize?: number;
  maxWaitMs?: number;
  logger?: ProjectorLogger;
  onBatch?: (stats: BatchStats) => void;
  newBatchId?: () => string;
  /** Backoff of transient store errors: first and largest wait. */
  retry?: { initialMs: number; maxMs: number };
}

export interface Projector {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** One batch through both sinks; exported for tests and rebuilds. */
  processBatch(records: readonly ConsumedRecord[]): Promise<BatchStats>;
  lag(): Promise<number>;
}

const silent: ProjectorLogger = { info() {}, warn() {}, error() {} };

/** Parses a record; anything that is not a valid event becomes a dead letter with the reason. */
export function parseRecord(record: ConsumedRecord): { event: DeliveryEvent } | { dead: DeadLetter } {
  let json: unknown;
  try {
    json = JSON.parse(record.value);
  } catch {
    return { dead: { payload: record.value, reason: 'value is not JSON' } };
  }
  const parsed = deliveryEventSchema.safeParse(json);
  if (parsed.success) return { event: parsed.data };
  const reason = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { dead: { payload: record.value, reason } };
}

/**
 * The projector: consumes the log in batches and folds each batch into Postgres (rows and
 * outbox in one transaction), then ships the outbox to ClickHouse; the log commits the batch
 * only after both. Store errors are retried with backoff; a good event is never skipped.
 */
export function createProjector(opts: ProjectorOptions): Projector {
  const logger = opts.logger ?? silent;
  const newBatchId = opts.newBatchId ?? randomUUID;
  const retry = opts.retry ?? { initialMs: 100, maxMs: 30_000 };
  let consumer: EventLogConsumer | null = null;
  let stopping = false;
  let batchesSinceSweep = 0;

  async function processBatch(records: readonly ConsumedRecord[]): Promise<BatchStats> {
    const started = performance.now();
    const events: DeliveryEvent[] = [];
    const dead: DeadLetter[] = [];
    for (const r of records) {
      const p = parseRecord(r);
      if ('event' in p) events.push(p.event);
      else dead.push(p.dead);
    }
    const result = await applyBatchToPostgres(opts.pool, events, dead, newBatchId);
    if (result.outbox) {
      await shipBatch(opts.ch, result.outbox.batchId, result.outbox.rows);
      await opts.pool.query('DELETE FROM analytics_outbox WHERE batch_id = $1', [result.outbox.batchId]);
    }
    return {
      records: records.length,
      applied: result.applied,
      duplicates: result.duplicates,
      deadLettered: dead.length,
      durationMs: performance.now() - started,
    };
  }

  async function withRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let wait = retry.initialMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (stopping) throw error;
        logger.warn({ err: error, attempt, retryInMs: wait }, `${what} failed; retrying`);
        await new Promise((r) => setTimeout(r, wait * (0.5 + Math.random() / 2)));
        wait = Math.min(wait * 2, retry.maxMs);
      }
    }
  }

  async function handle(batch: ConsumedRecord[]): Promise<void> {
    // Batches a crashed run left in the outbox are shipped before new work (and then now and then).
    if (batchesSinceSweep++ % 100 === 0) {
      await withRetry('outbox sweep', () => shipPendingOutbox(opts.pool, opts.ch, { olderThanMs: 10_000 }));
    }
    let attempt = 0;
    const stats = await withRetry('projection batch', async () => {
      // A failed attempt may have committed Postgres and left its outbox row unshipped: its events
      // are now known duplicates, so only the outbox still carries their figures.
      if (attempt++ > 0) await shipPendingOutbox(opts.pool, opts.ch);
      return processBatch(batch);
    });
    if (stats.deadLettered > 0) logger.warn({ count: stats.deadLettered }, 'records sent to dead_letters');
    opts.onBatch?.(stats);
  }

  return {
    processBatch,
    async start() {
      stopping = false;
      await withRetry('outbox recovery', () => shipPendingOutbox(opts.pool, opts.ch));
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
  };
}
