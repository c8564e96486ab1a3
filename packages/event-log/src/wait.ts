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
