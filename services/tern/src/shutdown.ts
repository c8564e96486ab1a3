import { Worker } from 'node:worker_threads';

/** One component of the process, closed on shutdown (`name` is what the logs call it). */
export interface Closer {
  name: string;
  close: () => Promise<unknown>;
}

export interface CloseOptions {
  /** Epoch ms by which every component must have been given up on. Absent: no deadline. */
  deadlineAt?: number;
  /** Told the components not yet finished, each time that changes (the watchdog's view). */
  onPending?: (names: readonly string[]) => void;
  /** Told of each component left behind, when it is left. */
  onAbandoned?: (name: string, waitedMs: number) => void;
  now?: () => number;
}

export interface CloseResult {
  /** Components that did not finish in their share of the deadline (still running, left behind). */
  unfinished: string[];
}

/**
 * Closes the components one after the other, in the given order. With a deadline, each may take
 * the time left minus a reserve for each component after it (1 s, or a twentieth of what is left
 * when less), so one that hangs is left behind — named in the result — and the stores after it
 * still close. A component that throws counts as finished: closing goes on.
 */
export async function closeInOrder(
  closers: readonly Closer[],
  opts: CloseOptions = {},
): Promise<CloseResult> {
  const now = opts.now ?? Date.now;
  const unfinished: string[] = [];
  const pending = closers.map((c) => c.name);
  opts.onPending?.([...pending]);
  for (const [i, closer] of closers.entries()) {
    const started = now();
    const closing = closer.close().then(
      () => true,
      () => true,
    );
    let finished: boolean;
    if (opts.deadlineAt === undefined) finished = await closing;
    else {
      const left = opts.deadlineAt - started;
      const after = closers.length - i - 1;
      const reserve = Math.min(1000, Math.max(0, left) / 20) * after;
      const share = Math.max(0, left - reserve);
      let timer: NodeJS.Timeout | undefined;
      finished = await Promise.race([
        closing,
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), share);
        }),
      ]);
      clearTimeout(timer);
    }
    if (finished) pending.splice(pending.indexOf(closer.name), 1);
    else {
      unfinished.push(closer.name);
      opts.onAbandoned?.(closer.name, now() - started);
    }
    opts.onPending?.([...pending]);
  }
  return { unfinished };
}

export interface ShutdownWatchdog {
  /** The components not yet finished, for the line the watchdog writes if it has to act. */
  pending(names: readonly string[]): void;
  stop(): void;
}

// Runs on its own thread: it fires even while the main thread is blocked (a native call waiting on
// a futex never returns to the event loop, so no timer of the main thread could). It writes one
// log line in pino's shape, synchronously, and kills the process.
const WATCHDOG_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
let pending = workerData.pending;
parentPort.on('message', (names) => { pending = names; });
setTimeout(() => {
  const line = {
    level: 50,
    time: Date.now(),
    pid: process.pid,
    msg: 'shutdown: ' + workerData.timeoutMs + ' ms passed and the process is still busy (its event loop is blocked); did not finish: ' + (pending.join(', ') || 'none') + '; killing the process',
    unfinished: pending,
  };
  try { writeSync(workerData.fd, JSON.stringify(line) + '\\n'); } catch {}
  process.kill(process.pid, 'SIGKILL');
}, Math.max(0, workerData.fireAt - Date.now()));
`;

/**
 * The last resort of SHUTDOWN_TIMEOUT_MS (issue 24 item 17): a thread that kills the process at
 * the deadline, however stuck the main thread is, naming the components still pending. The main
 * thread's own timer (a little earlier) normally exits first; this one only acts if it cannot.
 */
export function startShutdownWatchdog(opts: {
  /** Epoch ms at which it acts: absolute, so a thread slow to start does not push it later. */
  fireAt: number;
  timeoutMs: number;
  pending: readonly string[];
  /** Where its line goes: the fd of the process's log (stdout, as pino's default). */
  fd?: number;
}): ShutdownWatchdog {
  const worker = new Worker(WATCHDOG_SOURCE, {
    eval: true,
    workerData: {
      fireAt: opts.fireAt,
      timeoutMs: opts.timeoutMs,
      pending: [...opts.pending],
      fd: opts.fd ?? 1,
    },
    // Nothing of the main process's environment or arguments is needed there.
    env: {},
    argv: [],
    stdout: false,
    stderr: false,
  });
  worker.unref();
  return {
    pending: (names) => worker.postMessage([...names]),
    stop: () => void worker.terminate(),
  };
}
