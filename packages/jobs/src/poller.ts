import type { Logger } from '@tern/kernel';
import { backoffMs } from '@tern/kernel';

/**
 * The background poller every job of Tern runs on (retention, prune, the sender's due-list, the
 * dispatcher's workers, replays and sweep, the campaign fan-out, the sequence scheduler):
 *
 * - `start()` schedules the first run after `firstRunMs` (default 0), then one run every
 *   `intervalMs` after the previous run ended — runs never overlap;
 * - `wake()` runs now when idle, or once more right after the run in flight (so work that arrives
 *   during a run is never left for the next interval);
 * - a run that throws goes to `onError` (default: `logger.error`), and the next one waits longer
 *   each time in a row (doubling, at most `maxBackoffMs`), back to `intervalMs` after a success;
 * - `stop()` cancels the schedule and resolves once the run in flight (if any) has ended;
 * - timers are `unref`ed: a poller alone never keeps the process alive.
 */

export interface PollerOptions {
  /** Names the poller in the default error log line. */
  name: string;
  /** Pause between the end of a run and the start of the next. */
  intervalMs: number;
  /** One pass of the job. Its result is ignored. */
  run: () => Promise<unknown>;
  /** Called with what a run threw; the schedule goes on. Default: `logger.error`. */
  onError?: (error: unknown) => void;
  logger?: Logger;
  /** Delay of the first run after `start()`. Default 0 (at once). */
  firstRunMs?: number;
  /** Longest pause after failed runs in a row. Default `max(intervalMs, 5 s)`. */
  maxBackoffMs?: number;
}

export interface Poller {
  start(): void;
  /** Cancels the schedule and waits for the run in flight. */
  stop(): Promise<void>;
  /** Runs as soon as possible: now when idle, right after the run in flight otherwise. */
  wake(): void;
  readonly running: boolean;
}

export function createPoller(opts: PollerOptions): Poller {
  const { intervalMs } = opts;
  if (!(Number.isFinite(intervalMs) && intervalMs >= 0))
    throw new Error(`${opts.name}: intervalMs must be ≥ 0`);
  const maxBackoffMs = Math.max(opts.maxBackoffMs ?? Math.max(intervalMs, 5_000), intervalMs);
  const onError =
    opts.onError ??
    ((error: unknown) => opts.logger?.error({ err: error, poller: opts.name }, `${opts.name} failed`));

  let started = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let wakeRequested = false;
  let failures = 0;

  function schedule(delayMs: number): void {
    if (!started) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      inFlight = pass();
    }, delayMs);
    timer.unref();
  }

  async function pass(): Promise<void> {
    try {
      do {
        wakeRequested = false;
        await opts.run();
        failures = 0;
      } while (wakeRequested && started);
    } catch (error) {
      failures++;
      try {
        onError(error);
      } catch {
        // A failing error handler must not end the schedule.
      }
    } finally {
      inFlight = undefined;
      const wait =
        failures === 0 ? intervalMs : backoffMs(failures, { initialMs: intervalMs, maxMs: maxBackoffMs });
      schedule(wait);
    }
  }

  return {
    start() {
      if (started) return;
      started = true;
      failures = 0;
      schedule(opts.firstRunMs ?? 0);
    },
    async stop() {
      started = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await inFlight;
    },
    wake() {
      if (!started) return;
      if (inFlight) wakeRequested = true;
      else schedule(0);
    },
    get running() {
      return started;
    },
  };
}
