import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTern } from '../../../test/e2e/tern-process.js';

const dashboardRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The id of this test run's build: the browser tests' global setup names one
 * (`TERN_DASHBOARD_BUILD_ID`, inherited by every test process), else the run's database id.
 */
const buildId = () => process.env.TERN_DASHBOARD_BUILD_ID ?? process.env.TERN_TEST_RUN_ID;

/**
 * Builds the dashboard and Tern once per test run. Whoever needs the build (the browser tests'
 * global setup, the image test) calls this: the first builds under a lock, the others find the
 * run's stamp and reuse the build, so no Tern starts while a `vite build` is emptying `dist/`.
 */
export function buildAll(): void {
  const run = buildId();
  const stamp = join(dashboardRoot, 'artifacts', '.build-run');
  withLock(join(dashboardRoot, 'artifacts', '.build-lock'), () => {
    if (run && existsSync(stamp) && readFileSync(stamp, 'utf8') === run) return;
    execFileSync('npx', ['vite', 'build', '--logLevel', 'warn'], { cwd: dashboardRoot, stdio: 'pipe' });
    buildTern();
    if (run) writeFileSync(stamp, run);
  });
}

/** Runs `fn` holding a lock directory (mkdir is atomic); a lock older than 5 minutes is stale. */
function withLock(dir: string, fn: () => void): void {
  mkdirSync(dirname(dir), { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(dir);
      break;
    } catch {
      const age = existsSync(dir) ? Date.now() - statSync(dir).mtimeMs : 0;
      if (age > 300_000) rmSync(dir, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`${dir}: still locked after 5 minutes`);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    fn();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
