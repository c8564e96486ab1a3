import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../e2e/tern-process.js';

/**
 * Servers of the fault suite's own, started and stopped by the test: a native Kafka broker
 * (infra/kafka's scripts, on free ports) and a Postgres server (initdb into a temp dir, its own
 * port and socket directory). The shared broker (KAFKA_BROKERS) and the machine's Postgres are
 * never touched. Each server has a watchdog: a detached shell that stops and deletes it if this
 * test process dies before its teardown (kill -9, a crash), so nothing outlives the suite.
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const KAFKA_DIR = join(root, 'infra/kafka');

/** Runs a command with a time limit; rejects with its last stderr lines. */
export function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    execFile(
      cmd,
      args,
      { env: opts.env ?? process.env, timeout: opts.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        if (error) {
          const tail = `${stderr}`.trim().split('\n').slice(-8).join('\n');
          reject(new Error(`${cmd} ${args.join(' ')} failed (${error.message.split('\n')[0]}):\n${tail}`));
        } else resolveRun({ stdout: `${stdout}`, stderr: `${stderr}` });
      },
    );
  });
}

/** True while something accepts TCP connections on 127.0.0.1:port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((r) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      r(true);
    });
    socket.once('error', () => r(false));
  });
}

/** True while the process runs (a zombie waiting for its parent to reap it has ended). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S …"; the state follows the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * A detached shell that waits for this process to end and then runs `cleanup` (bash). Killed
 * (with its process group) by the returned function once the normal teardown has run.
 */
export function watchdog(cleanup: string, env: Record<string, string>): () => void {
  const child: ChildProcess = spawn(
    'bash',
    ['-c', `while kill -0 "$WATCHED_PID" 2>/dev/null; do sleep 1; done; ${cleanup}`],
    {
      detached: true,
      stdio: 'ignore',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, WATCHED_PID: String(process.pid) },
    },
  );
  child.unref();
  return () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
}

/** Two different free ports (the OS may hand the same one out twice in a row). */
async function twoFreePorts(): Promise<[number, number]> {
  const a = await freePort();
  for (;;) {
    const b = await freePort();
    if (b !== a && b !== a + 1) return [a, b];
  }
}

export interface DedicatedKafka {
  brokers: string[];
  port: number;
  /** Pid of the running broker process (read from infra/kafka/run/<port>/kafka.pid). */
  pid(): number | undefined;
  /** infra/kafka/stop.sh: SIGTERM to the broker, SIGKILL after 30 s. Resolves once it has exited. */
  stop(): Promise<void>;
  /** infra/kafka/start.sh: starts it again on the same data and waits until it serves topics. */
  start(): Promise<void>;
  /** Stops it (if running) and deletes its run directory. Safe to call more than once. */
  destroy(): Promise<void>;
}

/** A single-node KRaft broker of this test, on free ports, through the project's own scripts. */
export async function startDedicatedKafka(): Promise<DedicatedKafka> {
  const [port, controllerPort] = await twoFreePorts();
  const runDir = join(KAFKA_DIR, 'run', String(port));
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
    KAFKA_START_TIMEOUT: process.env.FAULTS_KAFKA_START_TIMEOUT ?? '150',
  };
  const script = (name: string) => run('bash', [join(KAFKA_DIR, name)], { env, timeoutMs: 200_000 });
  const unwatch = watchdog(`bash "$KAFKA_DIR/stop.sh" >/dev/null 2>&1; rm -rf "$RUN_DIR"`, {
    KAFKA_DIR,
    RUN_DIR: runDir,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
  });
  const pidFile = join(runDir, 'kafka.pid');
  const pid = () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : undefined);
  let destroyed = false;
  const broker: DedicatedKafka = {
    brokers: [`127.0.0.1:${port}`],
    port,
    pid,
    async stop() {
      await script('stop.sh');
    },
    async start() {
      await script('start.sh');
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        await script('stop.sh');
      } finally {
        rmSync(runDir, { recursive: true, force: true });
        unwatch();
      }
    },
  };
  try {
    await broker.start();
  } catch (error) {
    await broker.destroy().catch(() => undefined);
    throw error;
  }
  return broker;
}

/** The bin directory of the machine's Postgres (initdb, pg_ctl). FAULTS_PG_BIN overrides it. */
function postgresBin(): string {
  const candidates = [
    process.env.FAULTS_PG_BIN,
    (() => {
      try {
        return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
      } catch {
        return undefined;
      }
    })(),
    '/usr/lib/postgresql/16/bin',
    '/usr/lib/postgresql/15/bin',
  ];
  const found = candidates.find((d) => d && existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
  if (!found) throw new Error('no Postgres server binaries (initdb, pg_ctl): set FAULTS_PG_BIN');
  return found;
}

/**
 * `initdb` of a test's Postgres server into `dataDir` (trust auth, UTF8, C locale), and its
 * `postgresql.conf`: under `# comment`, `port` on 127.0.0.1 only with its Unix socket in
 * `socketDir`, then `settings`.
 */
export async function initPostgres(
  pgRun: (tool: string, args: string[]) => Promise<unknown>,
  dataDir: string,
  conf: { comment: string; port: number; socketDir: string; settings: readonly string[] },
): Promise<void> {
  await pgRun('initdb', [
    '-D',
    dataDir,
    '-A',
    'trust',
    '-U',
    'postgres',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  appendFileSync(
    join(dataDir, 'postgresql.conf'),
    [
      '',
      `# ${conf.comment}`,
      `port = ${conf.port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${conf.socketDir}'`,
      ...conf.settings,
      '',
    ].join('\n'),
  );
}

export interface DedicatedPostgres {
  url: string;
  port: number;
  /** Pid of the postmaster (first line of postmaster.pid), while it runs. */
  pid(): number | undefined;
  /** `pg_ctl restart -m <mode>`: the server stops (sessions ended) and starts again. */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** The server's log (for a failure message). */
  log(): string;
  /** Stops it and deletes its directory. Safe to call more than once. */
  destroy(): Promise<void>;
}

/**
 * A Postgres server of this test: `initdb` into a temp dir (trust auth), listening on 127.0.0.1
 * on a free port with its Unix socket in that dir. initdb and the server refuse to run as root,
 * so as root they run as the `postgres` OS user (runuser), which owns the dir.
 */
export async function startDedicatedPostgres(
  opts: { settings?: readonly string[] } = {},
): Promise<DedicatedPostgres> {
  const bin = postgresBin();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tern-faults-pg-'));
  const dataDir = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const pgRun = (tool: string, args: string[], timeoutMs = 90_000) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { timeoutMs })
      : run(join(bin, tool), args, { timeoutMs });
  // Always with -l: without it the postmaster would inherit (and hold open) our stdout pipe.
  const ctl = (args: string[]) => pgRun('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '90', ...args]);
  const runAs = asRoot ? 'runuser -u postgres -- ' : '';
  const unwatch = watchdog(
    `${runAs}"$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1; rm -rf "$PG_DIR"`,
    { PG_BIN: bin, PG_DATA: dataDir, PG_DIR: dir },
  );
  const pidFile = join(dataDir, 'postmaster.pid');
  let destroyed = false;
  const server: DedicatedPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    pid: () => {
      try {
        return Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      } catch {
        return undefined;
      }
    },
    async restart(mode) {
      await ctl(['-m', mode, 'restart']);
    },
    async stop(mode) {
      await ctl(['-m', mode, 'stop']);
    },
    async start() {
      await ctl(['start']);
    },
    log: () => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        if (existsSync(pidFile)) await ctl(['-m', 'immediate', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        unwatch();
      }
    },
  };
  try {
    // In the config file, so every start (and a restart) uses this port and socket dir, never 5432.
    await initPostgres(pgRun, dataDir, {
      comment: 'tern fault suite',
      port,
      socketDir: dir,
      // Lines of the caller's own (later lines win), e.g. a bench's preloaded extension.
      settings: ['max_connections = 40', 'shared_buffers = 64MB', ...(opts.settings ?? [])],
    });
    await server.start();
  } catch (error) {
    await server.destroy().catch(() => undefined);
    throw error;
  }
  return server;
}
