/**
 * A wake-up signal for polling loops: `wait(ms)` resolves after `ms` or as soon as `wake()` is
 * called, whichever comes first, so a stop or a notification never waits out a full interval.
 *
 * A `wake()` with nobody waiting would be lost, so a loop that looks for work and then sleeps
 * reads `wakes()` before it looks and passes the count to `wait`: a wake that came while it was
 * looking ends the wait at once. After `close()` every wait, now or later, resolves at once.
 */
export interface WakeSignal {
  wait(ms: number, since?: number): Promise<void>;
  wake(): void;
  /** How many wakes so far; `wait(ms, since)` resolves at once if there were more than `since`. */
  wakes(): number;
  close(): void;
}

export function createWakeSignal(): WakeSignal {
  const waiters = new Set<() => void>();
  let wakes = 0;
  let closed = false;
  return {
    wait(ms, since) {
      if (closed || (since !== undefined && wakes > since)) return Promise.resolve();
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
      wakes++;
      for (const done of [...waiters]) done();
    },
    wakes: () => wakes,
    close() {
      closed = true;
      for (const done of [...waiters]) done();
    },
  };
}
