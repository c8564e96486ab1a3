/**
 * A wake-up signal for polling loops: `wait(ms)` resolves after `ms` or as soon as `wake()` is
 * called, whichever comes first, so a stop or a notification never waits out a full interval.
 */
export interface WakeSignal {
  wait(ms: number): Promise<void>;
  wake(): void;
}

export function createWakeSignal(): WakeSignal {
  const waiters = new Set<() => void>();
  return {
    wait(ms) {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        waiters.add(done);
      });
    },
    wake() {
      for (const done of [...waiters]) done();
    },
  };
}

/** Exponential backoff for redelivery of a failed batch: 100 ms, 200 ms, … capped at `maxMs`. */
export function backoffMs(attempt: number, maxMs = 5_000): number {
  return Math.min(maxMs, 100 * 2 ** Math.max(0, attempt - 1));
}

/** Rejects with `onTimeout()` if `promise` has not settled within `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
