import { createRequire } from 'node:module';
import { onFirstUse } from '@tern/kernel';

/** What `scheduleCheckPendingRequests` reads and writes of kafkajs's per-connection RequestQueue. */
export interface RequestQueueState {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null;
  checkPendingRequests(): void;
}

/** kafkajs's `CHECK_PENDING_REQUESTS_INTERVAL`: how soon a queue with requests waiting looks again. */
const CHECK_PENDING_MS = 10;

/**
 * kafkajs 2.2.4's `RequestQueue#scheduleCheckPendingRequests`, without its endless timer. The
 * original arms a timer whatever the queue holds: with nothing pending and no throttle its delay is
 * negative (Node makes it 1 ms), the timer checks the empty queue and arms the next one — once a
 * connection has had a response, about 1 000 wake-ups a second for the life of every broker
 * connection (an idle producer, admin and consumer: 2.7–3.3 % of a core against 0.7–0.8 % with
 * this, measured), and Node ≥ 23 warns of the negative delay (`TimeoutNegativeWarning`). A known
 * kafkajs defect, fixed upstream only in unreleased proposals; this is their fix: with nothing
 * pending and no throttle, arm nothing. Nothing waits on that timer then — a request that cannot be
 * sent at once is pushed to `pending` and arms it, and every response and timeout checks the queue.
 */
export function scheduleCheckPendingRequests(this: RequestQueueState): void {
  if (this.throttleCheckTimeoutId) return;
  const untilUnthrottled = this.throttledUntil - Date.now();
  let delay: number;
  if (this.pending.length > 0) delay = untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_MS;
  else if (untilUnthrottled > 0) delay = untilUnthrottled;
  else return;
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delay);
}

/** The kafkajs version `scheduleCheckPendingRequests` was written for (a test pins the installed one). */
export const PATCHED_KAFKAJS = '2.2.4';

/**
 * kafkajs, loaded when a Kafka log is first made: a process on the Postgres-table log never loads
 * it. Its RequestQueue's `scheduleCheckPendingRequests` is the one above.
 */
export const kafkajs = onFirstUse(() => {
  const require = createRequire(import.meta.url);
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
    prototype: { scheduleCheckPendingRequests: unknown };
  };
  RequestQueue.prototype.scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  return require('kafkajs') as typeof import('kafkajs');
});
