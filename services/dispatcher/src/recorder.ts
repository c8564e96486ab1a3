import { recordDelivered } from '@tern/webhooks';
import type pg from 'pg';

type Delivered = Parameters<typeof recordDelivered>[1][number];

export interface DeliveredRecorder {
  /** Resolves once this successful attempt is recorded (with the others that ended meanwhile). */
  record(attempt: Delivered): Promise<void>;
}

/**
 * Successful attempts recorded together (issue 45): an attempt that ends waits for the others in
 * flight to end (`inFlight()`: once every one of them waits here) or `delayMs` at most, then one
 * statement records them all (`recordDelivered`), at most `max` at once. A crash before that
 * statement repeats those deliveries when their lease ends (at-least-once, the same
 * `webhook-id`), as a crash during an attempt always could. Failed attempts are recorded one by
 * one (`recordAttempt`: retry schedule, endpoint disabling).
 */
export function createDeliveredRecorder(
  pool: pg.Pool,
  inFlight: () => number,
  delayMs = 20,
  max = 256,
): DeliveredRecorder {
  let waiting: { attempt: Delivered; resolve: () => void; reject: (e: unknown) => void }[] = [];
  let timer: NodeJS.Timeout | null = null;

  async function flush(): Promise<void> {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    const taken = waiting;
    waiting = [];
    try {
      await recordDelivered(
        pool,
        taken.map((t) => t.attempt),
      );
      for (const t of taken) t.resolve();
    } catch (error) {
      for (const t of taken) t.reject(error);
    }
  }

  return {
    record(attempt) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ attempt, resolve, reject });
        if (waiting.length >= max || waiting.length >= inFlight()) void flush();
        else timer ??= setTimeout(() => void flush(), delayMs);
      });
    },
  };
}
