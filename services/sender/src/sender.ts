import type { EventLogConsumer } from '@tern/event-log';
import { silentLogger } from '@tern/kernel';
import { createAttempt } from './attempt.js';
import { createDueListJob } from './due-list.js';
import { type ProviderHealth, SENDER_GROUP, type SenderContext, type SenderOptions } from './options.js';
import { createOutgoingStore } from './outgoing-store.js';
import { createProviderWatch } from './provider-health.js';

export {
  DEFAULT_RETRY_DELAYS_MS,
  type ProviderHealth,
  SENDER_GROUP,
  type SenderOptions,
} from './options.js';

export interface Sender {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** One pass over the due-list (claims and sends what is due); returns the emails handled. */
  runOnce(): Promise<number>;
  /** Marks the rows of these consumed email.queued events ready (the consumer's work); exported for tests. */
  markQueued(events: readonly { tenantId: string; emailId: string }[]): Promise<number>;
  /** Whether the provider is failing (`/ready` and the `sender_provider_failing` metric say so). */
  providerHealth(): ProviderHealth;
}

/**
 * The sender (SPEC §11). Two loops:
 * - a consumer of the log (its own group) that turns each `email.queued` of a send into a due
 *   entry of `outgoing_emails` (the row was written by the API before it appended the event);
 * - the due-list worker: claims due rows (`FOR UPDATE SKIP LOCKED`, with a lease, so several
 *   instances never take the same row and a dead one's rows come back), renders, checks the
 *   suppression list, adds tracking, hands each message to the provider in its own transaction,
 *   and appends the outcome to the log before marking the row done.
 * A crash repeats at most the provider transactions in flight (each with the same Message-ID).
 *
 * Its parts: `outgoing-store.ts` (the statements on the due-list), `attempt.ts` (one email's attempt),
 * `provider-health.ts` (whether the provider fails) and `due-list.ts` (the `createPoller` job).
 */
export function createSender(opts: SenderOptions): Sender {
  const ctx: SenderContext = {
    opts,
    logger: opts.logger ?? silentLogger,
    now: opts.now ?? (() => new Date()),
  };
  const { logger } = ctx;
  const watch = createProviderWatch(ctx);
  const store = createOutgoingStore(ctx);
  const dueList = createDueListJob(ctx, store, createAttempt(ctx, watch), watch);
  let consumer: EventLogConsumer | null = null;

  return {
    markQueued: store.markQueued,
    runOnce: dueList.runOnce,
    providerHealth: watch.health,
    async start() {
      consumer = await opts.log.consume({
        group: opts.group ?? SENDER_GROUP,
        fromBeginning: true,
        maxBatchSize: 1000,
        maxWaitMs: 50,
        async handle({ events }) {
          // Dead letters are the projector's; an email.queued that is not Tern's send moves no row.
          const queued = events.filter((e) => e.type === 'email.queued');
          if ((await store.markQueued(queued)) > 0) dueList.poller.wake();
        },
      });
      dueList.poller.start();
      logger.info({ group: opts.group ?? SENDER_GROUP, provider: opts.provider.name }, 'sender started');
    },
    async stop() {
      const stopping = dueList.poller.stop();
      await consumer?.stop();
      consumer = null;
      await stopping;
      await opts.provider.close?.();
    },
  };
}
