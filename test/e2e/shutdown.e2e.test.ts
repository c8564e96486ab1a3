import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/services.js';
import { buildTern, startTern } from './tern-process.js';

const TIMEOUT_MS = 4000;

/** Starts the built process with one component made to hang on close; SIGTERM; how it ended. */
async function stopWithHang(hang: string, nodeEnv = 'test') {
  const tern = await startTern({
    env: {
      NODE_ENV: nodeEnv,
      LOG_LEVEL: 'info',
      DATA_DIR: tempDir('tern-e2e-shutdown-'),
      SHUTDOWN_TIMEOUT_MS: String(TIMEOUT_MS),
      TERN_TEST_SHUTDOWN_HANG: hang,
    },
    // Start-up of the embedded stores is slow on a loaded machine; only the stop is timed.
    readyTimeoutMs: 150_000,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    tern.child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const sentAt = performance.now();
  tern.child.kill('SIGTERM');
  // Past the deadline by far: the test's own SIGKILL, so a failure cannot hang the run.
  const guard = setTimeout(() => tern.child.kill('SIGKILL'), TIMEOUT_MS * 3);
  const end = await exited;
  clearTimeout(guard);
  const stdout = tern.stdout();
  return {
    ...end,
    elapsedMs: performance.now() - sentAt,
    ownMs: ownMeasure(stdout),
    stdout,
    stderr: tern.stderr(),
  };
}

/** The process's own measure: from its `shutting down` line to its last line (pino's `time`). */
function ownMeasure(stdout: string): number {
  const lines = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { time: number; msg: string });
  const from = lines.find((l) => l.msg === 'shutting down');
  const last = lines.at(-1);
  return from && last ? last.time - from.time : Number.NaN;
}

/**
 * Issue 24 item 17 on the built process: after SIGTERM it exits within SHUTDOWN_TIMEOUT_MS whatever
 * hangs, naming the component that did not finish — a close that never resolves, and a main
 * thread asleep on a futex (the hang once seen: HTTP closed, the process asleep, SIGKILL needed).
 */
describe('shutdown has a deadline (SHUTDOWN_TIMEOUT_MS)', () => {
  beforeAll(() => buildTern(), 120_000);

  it('a close that never finishes: left behind, the rest closed, exit 1 within the deadline naming it', async () => {
    const end = await stopWithHang('sender:promise');
    expect(end.ownMs).toBeLessThan(TIMEOUT_MS);
    expect(end.elapsedMs).toBeLessThan(TIMEOUT_MS);
    expect(end.code, end.stdout + end.stderr).toBe(1);
    expect(end.stdout).toMatch(/"component":"sender".*shutdown: sender did not finish; left behind/);
    expect(end.stdout).toMatch(/shutdown: did not finish within 4000 ms \(left behind\): sender; exiting/);
  }, 240_000);

  it('a main thread blocked on a futex: the watchdog thread logs the pending components and kills it within the deadline', async () => {
    const end = await stopWithHang('sender:block');
    expect(end.ownMs).toBeLessThan(TIMEOUT_MS);
    expect(end.elapsedMs).toBeLessThan(TIMEOUT_MS);
    expect(end.signal, end.stdout + end.stderr).toBe('SIGKILL');
    // The sender and everything after it (projector, stores) were still pending.
    expect(end.stdout).toMatch(
      /shutdown: 4000 ms passed and the process is still busy \(its event loop is blocked\); did not finish: sender(, [a-z-]+)*, postgres(, [a-z-]+)*; killing the process/,
    );
  }, 240_000);

  it('the hook is ignored outside NODE_ENV=test: a development process stops cleanly', async () => {
    const end = await stopWithHang('sender:block', 'development');
    expect(end.code, end.stdout + end.stderr).toBe(0);
    expect(end.elapsedMs).toBeLessThan(TIMEOUT_MS);
    expect(end.stdout).not.toContain('did not finish');
  }, 240_000);
});
