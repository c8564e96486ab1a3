import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signDashboardToken } from '@tern/auth';
import { waitFor } from '../support/services.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const MAIN = resolve(root, 'services/tern/dist/main.js');
export const SEED_DEMO = resolve(root, 'services/tern/dist/seed-demo.js');

/** A dashboard session of the tenant's owner, signed with the process's JWT_SECRET; an hour unless said. */
export const ownerJwt = (secret: string, tenantId: string, expiresInSeconds = 3600): string =>
  signDashboardToken({ secret, tenantId, role: 'owner', expiresInSeconds });

/** Builds the all-in-one bundle the way `npm run build` does (esbuild: a couple of seconds). */
export function buildTern(): void {
  execFileSync('npx', ['tsup'], { cwd: resolve(root, 'services/tern'), stdio: 'pipe' });
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * `n` distinct free loopback ports: each is held until all are known, so two calls in a row cannot
 * hand out the same port (a process taking a port of its own and `PORT` got EADDRINUSE).
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolveServer, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolveServer(server));
        }),
    ),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    return typeof address === 'object' && address ? address.port : 0;
  });
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
  return ports;
}

export interface TernProcess {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit code (fails the test after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<number | null>;
}

/** Spawns the built process with only the given environment, collecting its output. */
function spawnTern(env: Record<string, string>, args: string[]) {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => {
    output.stdout += d;
  });
  child.stderr!.on('data', (d) => {
    output.stderr += d;
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output, exited };
}

/**
 * How long a start may take before `/health` answers, by default: the first start of a file loads
 * chDB (≈ 500 MB) and runs the migrations, which took over 60 s on a loaded CI machine (two
 * files failed there with nothing printed). Time to ready is measured by
 * `bench/experiments/time-to-ready.ts`, not bounded here.
 */
const DEFAULT_READY_TIMEOUT_MS = 120_000;

/** Starts the built process and waits until `/health` answers. */
export async function startTern(opts: {
  env: Record<string, string>;
  args?: string[];
  readyTimeoutMs?: number;
}): Promise<TernProcess> {
  const port = opts.env.PORT ?? String(await freePort());
  const { child, output, exited } = spawnTern(
    { LOG_LEVEL: 'warn', ...opts.env, PORT: port },
    opts.args ?? [],
  );
  const url = `http://127.0.0.1:${port}`;
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  // A process that exited ends the wait at once (not at the timeout: it will never answer).
  await waitFor(
    async () => {
      if (dead) return 'exited';
      const res = await fetch(`${url}/health`);
      return res.ok && 'ready';
    },
    {
      timeoutMs: opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
      intervalMs: 100,
      description: `tern at ${url}`,
    },
  )
    .then((state) => {
      if (state === 'exited') throw new Error(`tern at ${url} exited before it was ready`);
    })
    .catch((e: unknown) => {
      if (!dead) child.kill('SIGKILL');
      throw new Error(
        `${e instanceof Error ? e.message : String(e)}\nstdout: ${output.stdout}\nstderr: ${output.stderr}`,
      );
    });
  return {
    child,
    url,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    async stop(timeoutMs = 30_000) {
      if (dead) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Runs the process to its end (for start-up errors); returns the exit code and output. */
export async function runTernToExit(env: Record<string, string>, args: string[] = []) {
  const { child, output, exited } = spawnTern(env, args);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await exited;
  clearTimeout(timer);
  return { code, ...output };
}
