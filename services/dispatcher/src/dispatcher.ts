import type { LogEvent } from '@tern/contracts';
import type { EventLogConsumer } from '@tern/event-log';
import { silentLogger } from '@tern/kernel';
import type { DispatcherContext } from './context.js';
import { enqueue } from './deliveries.js';
import {
  DEFAULT_DISABLE_AFTER_MS,
  DEFAULT_LINGER_MS,
  DEFAULT_RETRY_SCHEDULE_MS,
  DEFAULT_TIMEOUT_MS,
  type DispatcherOptions,
} from './options.js';
import { createReplayJob } from './replays.js';
import { createSweepJob, sweepRecords } from './sweep.js';
import { createDeliveryWorkers } from './workers.js';

export {
  type AttemptRecord,
  DEFAULT_DISABLE_AFTER_MS,
  DEFAULT_RETRY_SCHEDULE_MS,
  DEFAULT_TIMEOUT_MS,
  DISPATCHER_GROUP,
  type DispatcherOptions,
} from './options.js';

/**
 * The dispatcher (SPEC §17): reads the event log in its own consumer group and turns each event
 * into one delivery per enabled endpoint of the tenant whose filter matches (rows in
 * `webhook_deliveries`, written before the log position is committed: nothing is lost, a re-read
 * makes nothing new). Workers claim due deliveries with `FOR UPDATE SKIP LOCKED`, pushing
 * `next_attempt_at` one lease ahead; the attempt's result is written in one transaction. A
 * dispatcher killed mid-attempt leaves the delivery due again when the lease ends: another (or
 * the restarted) dispatcher repeats it with the same `webhook-id` — at-least-once.
 *
 * Its jobs, each a `createPoller` of its own file: the delivery workers (`workers.ts`), the
 * replays (`replays.ts`) and the record sweep (`sweep.ts`); `deliveries.ts` turns events into rows.
 */

export interface Dispatcher {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Deletes finished records older than the retention, in batches; resolves with how many deliveries went. */
  sweep(): Promise<number>;
  /** Turns consumed events into deliveries (what the consumer does with a batch). */
  enqueue(events: readonly LogEvent[]): Promise<number>;
  /** Claims and attempts the due deliveries once; resolves with how many were attempted. */
  runDue(): Promise<number>;
  lag(): Promise<number>;
}

export function createDispatcher(opts: DispatcherOptions): Dispatcher {
  const { pool, log } = opts;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const leaseMs = opts.leaseMs ?? timeoutMs + 5_000;
  if (leaseMs <= timeoutMs) throw new Error('leaseMs must exceed timeoutMs');

  let consumer: EventLogConsumer | null = null;
  let running = false;
  const ctx: DispatcherContext = {
    opts,
    pool,
    log,
    now: opts.now ?? (() => new Date()),
    logger: opts.logger ?? silentLogger,
    running: () => running,
    wakeWorkers: () => workers.poller.wake(),
  };
  const workers = createDeliveryWorkers(ctx, {
    schedule: opts.retryScheduleMs ?? DEFAULT_RETRY_SCHEDULE_MS,
    timeoutMs,
    leaseMs,
    disableAfterMs: opts.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS,
    concurrency: opts.concurrency ?? 16,
    pollIntervalMs: opts.pollIntervalMs ?? 250,
    graceMs: opts.projectionGraceMs ?? 30_000,
  });
  const replays = createReplayJob(ctx, opts.replayPollMs ?? 1_000);
  const retentionMs = opts.recordRetentionMs ?? 30 * 86_400_000;
  const sweep = () => sweepRecords(ctx, retentionMs);
  const sweeper = createSweepJob(ctx, sweep, opts.sweepIntervalMs ?? 600_000);

  return {
    async start() {
      running = true;
      consumer = await log.consume({
        group: opts.group,
        fromBeginning: false,
        maxBatchSize: opts.maxBatchSize ?? 1000,
        maxWaitMs: opts.maxWaitMs ?? 100,
        lingerMs: opts.lingerMs ?? DEFAULT_LINGER_MS,
        // Delivery events and sending domains' events (SPEC §20) alike.
        handle: async ({ events, domainEvents, inboundEvents }) => {
          await enqueue(ctx, [...events, ...domainEvents, ...inboundEvents]);
        },
      });
      workers.poller.start();
      replays.start();
      sweeper.start();
    },
    async stop() {
      running = false;
      const stopping = Promise.all([workers.poller.stop(), replays.stop(), sweeper.stop()]);
      await consumer?.stop();
      consumer = null;
      await stopping;
      await workers.settled();
    },
    sweep,
    enqueue: (events) => enqueue(ctx, events),
    runDue: workers.runDue,
    lag: () => log.lag(opts.group),
  };
}
