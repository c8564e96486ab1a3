import { silentLogger } from '@tern/kernel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPoller, type Poller } from '../src/poller.js';

const pollers: Poller[] = [];
function poller(opts: Parameters<typeof createPoller>[0]): Poller {
  const p = createPoller(opts);
  pollers.push(p);
  return p;
}

afterEach(async () => {
  const stopping = Promise.all(pollers.splice(0).map((p) => p.stop()));
  // A run held by a fake timer ends only when the fake clock moves.
  if (vi.isFakeTimers()) await vi.runAllTimersAsync();
  vi.useRealTimers();
  await stopping;
});

/** A poller whose run only counts, and the count of runs once the fake clock has moved `ms`. */
function countingPoller(opts: Omit<Parameters<typeof createPoller>[0], 'run'>) {
  let runs = 0;
  const p = poller({ ...opts, run: async () => void runs++ });
  const runsAfter = async (ms: number) => {
    await vi.advanceTimersByTimeAsync(ms);
    return runs;
  };
  return { p, runs: () => runs, runsAfter };
}

/** A promise with its resolve, to hold a run open. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

describe('createPoller', () => {
  it('runs at once on start, then every intervalMs after the previous run ended', async () => {
    vi.useFakeTimers();
    const { p, runs, runsAfter } = countingPoller({ name: 't', intervalMs: 1000 });
    expect(runs()).toBe(0);
    p.start();
    expect(await runsAfter(0)).toBe(1);
    expect(await runsAfter(999)).toBe(1);
    expect(await runsAfter(1)).toBe(2);
    expect(await runsAfter(3000)).toBe(5);
  });

  it('waits firstRunMs before the first run, and start() twice schedules once', async () => {
    vi.useFakeTimers();
    const { p, runsAfter } = countingPoller({ name: 't', intervalMs: 100, firstRunMs: 500 });
    p.start();
    p.start();
    expect(await runsAfter(499)).toBe(0);
    expect(await runsAfter(1)).toBe(1);
    expect(await runsAfter(100)).toBe(2);
  });

  it('never overlaps runs: a slow run delays the next one', async () => {
    vi.useFakeTimers();
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const p = poller({
      name: 't',
      intervalMs: 10,
      run: async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, 50));
        active--;
        runs++;
      },
    });
    p.start();
    p.wake();
    await vi.advanceTimersByTimeAsync(200);
    expect(maxActive).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(runs).toBeLessThanOrEqual(4);
  });

  it('wake() runs at once when idle, and once more after the run in flight when busy', async () => {
    vi.useFakeTimers();
    let runs = 0;
    let hold: ReturnType<typeof gate> | null = null;
    const p = poller({
      name: 't',
      intervalMs: 60_000,
      run: async () => {
        runs++;
        if (hold) await hold.promise;
      },
    });
    p.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(1);
    p.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(2);

    hold = gate();
    p.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(3); // in flight, held
    p.wake();
    p.wake();
    const held = hold;
    hold = null;
    held.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(4); // the wakes during the run: one more run, right after
    await vi.advanceTimersByTimeAsync(59_999);
    expect(runs).toBe(4);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(5);
  });

  it('wake() before start or after stop does nothing', async () => {
    vi.useFakeTimers();
    const { p, runs, runsAfter } = countingPoller({ name: 't', intervalMs: 10 });
    p.wake();
    expect(await runsAfter(100)).toBe(0);
    p.start();
    await vi.advanceTimersByTimeAsync(0);
    await p.stop();
    const after = runs();
    p.wake();
    expect(await runsAfter(100)).toBe(after);
    expect(p.running).toBe(false);
  });

  it('stop() waits for the run in flight and cancels the schedule', async () => {
    const hold = gate();
    let finished = false;
    let runs = 0;
    const p = poller({
      name: 't',
      intervalMs: 5,
      run: async () => {
        runs++;
        await hold.promise;
        finished = true;
      },
    });
    p.start();
    await vi.waitFor(() => expect(runs).toBe(1));
    let stopped = false;
    const stopping = p.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    hold.open();
    await stopping;
    expect(finished).toBe(true);
    await new Promise((r) => setTimeout(r, 30));
    expect(runs).toBe(1);
  });

  it('reports errors to onError, backs off while runs fail, and returns to intervalMs after a success', async () => {
    vi.useFakeTimers();
    const starts: number[] = [];
    const errors: unknown[] = [];
    let failing = 3;
    const t0 = Date.now();
    const p = poller({
      name: 't',
      intervalMs: 100,
      maxBackoffMs: 300,
      onError: (e) => errors.push(e),
      run: async () => {
        starts.push(Date.now() - t0);
        if (failing-- > 0) throw new Error('down');
      },
    });
    p.start();
    await vi.advanceTimersByTimeAsync(1000);
    // Fails at 0 (next in 100), 100 (next in 200), 300 (next in 300, capped), ok at 600, then every 100.
    expect(starts.slice(0, 6)).toEqual([0, 100, 300, 600, 700, 800]);
    expect(errors).toHaveLength(3);
    expect((errors[0] as Error).message).toBe('down');
  });

  it('logs through logger.error by default, and a throwing onError does not end the schedule', async () => {
    vi.useFakeTimers();
    const logged: { obj: object; msg?: string }[] = [];
    const p = poller({
      name: 'job-x',
      intervalMs: 10,
      maxBackoffMs: 10,
      logger: {
        ...silentLogger,
        error: (obj, msg) => {
          logged.push({ obj, ...(msg === undefined ? {} : { msg }) });
        },
      },
      run: async () => {
        throw new Error('boom');
      },
    });
    p.start();
    await vi.advanceTimersByTimeAsync(25);
    expect(logged.length).toBe(3);
    expect(logged[0]?.msg).toBe('job-x failed');

    let calls = 0;
    const q = poller({
      name: 'y',
      intervalMs: 10,
      maxBackoffMs: 10,
      onError: () => {
        calls++;
        throw new Error('handler');
      },
      run: async () => {
        throw new Error('boom');
      },
    });
    q.start();
    await vi.advanceTimersByTimeAsync(25);
    expect(calls).toBe(3);
  });

  it('unrefs its timer: a started poller alone does not keep the process alive', () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const p = poller({ name: 't', intervalMs: 1000, firstRunMs: 1000, run: async () => undefined });
    p.start();
    const timer = spy.mock.results.at(-1)?.value as NodeJS.Timeout;
    spy.mockRestore();
    expect(timer.hasRef()).toBe(false);
  });

  it('rejects a negative interval', () => {
    expect(() => createPoller({ name: 't', intervalMs: -1, run: async () => undefined })).toThrow(
      /intervalMs/,
    );
  });
});
