import type { EventStream } from '@tern/event-log';
import type { Logger } from '@tern/kernel';
import type { SecretBox } from '@tern/webhooks';
import type pg from 'pg';
import type { PostResult } from './http-post.js';

export interface DispatcherOptions {
  pool: pg.Pool;
  log: EventStream;
  /** Consumer group of the live deliveries; replays use `<group>.replay.<id>`. */
  group: string;
  secretBox: SecretBox;
  /** WEBHOOK_ALLOW_PRIVATE: loopback/private targets and http:// allowed. */
  allowPrivate: boolean;
  now?: () => Date;
  logger?: Logger;
  /** Waits after each failed attempt (SPEC §17); after the last one the delivery is failed. */
  retryScheduleMs?: readonly number[];
  /** Whole-attempt timeout. Default 10 s. */
  timeoutMs?: number;
  /** How long a claimed delivery is kept from other workers; must exceed `timeoutMs`. Default timeout + 5 s. */
  leaseMs?: number;
  /** An endpoint whose attempts have all failed for this long is disabled. Default 5 days. */
  disableAfterMs?: number;
  /** Attempts in flight per dispatcher. Default 16. */
  concurrency?: number;
  /** How often the workers look for due deliveries when nothing woke them. Default 250 ms. */
  pollIntervalMs?: number;
  /** How often pending replays are looked for. Default 1 s. */
  replayPollMs?: number;
  /** An event whose email is not projected yet waits for it this long before going out without it. Default 30 s. */
  projectionGraceMs?: number;
  /** Finished deliveries (and their attempts) and finished replays are deleted after this long. Default 30 days. */
  recordRetentionMs?: number;
  /** How often that sweep runs. Default 10 min. */
  sweepIntervalMs?: number;
  /** Log batches (tests and benches shorten them). */
  maxBatchSize?: number;
  maxWaitMs?: number;
  /**
   * How long events that fill less than a log batch wait for more before they are taken
   * (`ConsumeOptions.lingerMs`): a batch costs one insert of deliveries whatever it holds, so a
   * trickle of events costs a statement each without it. Default 100 ms, 0 for at once.
   */
  lingerMs?: number;
  onAttempt?: (attempt: AttemptRecord) => void;
}

export interface AttemptRecord {
  deliveryId: string;
  endpointId: string;
  eventId: string;
  result: PostResult;
  outcome: 'delivered' | 'retry' | 'failed';
}

/** How long a short log batch waits for more events (`DispatcherOptions.lingerMs`). */
export const DEFAULT_LINGER_MS = 100;

/** SPEC §17: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — each after the previous failure. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_DISABLE_AFTER_MS = 5 * 86_400_000;
export const DISPATCHER_GROUP = 'tern-dispatcher';
