/**
 * Time from spawn to `/ready` of the built process on the embedded default (PGlite + chDB, every
 * service), issue 45 item 6: a first start (a fresh data directory: every migration applied) and
 * restarts (nothing pending), quiet and beside `BUSY` busy-loop processes (`node -e 'for(;;){}'`,
 * killed when their level ends, each bounded by `timeout 900` should this process die first; with a
 * bound of 120 s they used to end while the second build of a level was still starting).
 *   npx tsx bench/experiments/time-to-ready.ts [main.js …]   (default services/tern/dist/main.js)
 *   TTR_BUSY=0,20 TTR_RESTARTS=2 TTR_CPU_PROF=dir
 * Several main.js: measured alternately, so a before and an after share the machine's load.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../lib/services.js';

const mains = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['services/tern/dist/main.js'];
const busyLevels = (process.env.TTR_BUSY ?? '0,20').split(',').map(Number);
const restarts = Number(process.env.TTR_RESTARTS ?? 2);
const cpuProf = process.env.TTR_CPU_PROF;

function busy(n: number): ChildProcess[] {
  return Array.from({ length: n }, () =>
    // Its own process group: killing the group kills `timeout` and the loop under it.
    spawn('timeout', ['900', process.execPath, '-e', 'for(;;){}'], { stdio: 'ignore', detached: true }),
  );
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0];

/** CPU seconds (user + system) of a process and its children so far: what the start cost whatever the load. */
function cpuSeconds(pid: number): number {
  const stat = (p: string) => {
    try {
      const f = readFileSync(`/proc/${p}/stat`, 'utf8')
        .slice(readFileSync(`/proc/${p}/stat`, 'utf8').lastIndexOf(')') + 2)
        .split(' ');
      return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / 100 };
    } catch {
      return null;
    }
  };
  let total = stat(String(pid))?.cpu ?? 0;
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    const s = stat(p);
    if (s?.ppid === pid) total += s.cpu;
  }
  return total;
}

async function timeToReady(
  main: string,
  dataDir: string,
  label: string,
): Promise<{ ms: number; cpuMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(cpuProf, label)}`] : []), main],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PORT: String(port),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  let ms = Number.NaN;
  let cpuMs = Number.NaN;
  while (performance.now() - started < 180_000 && child.exitCode === null) {
    const ok = await fetch(`http://127.0.0.1:${port}/ready`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) {
      ms = performance.now() - started;
      cpuMs = cpuSeconds(child.pid!) * 1000;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  return { ms, cpuMs };
}

for (const n of busyLevels) {
  const loops = busy(n);
  try {
    if (n > 0) await new Promise((r) => setTimeout(r, 3000));
    for (const [i, main] of mains.entries()) {
      const dataDir = mkdtempSync(join(tmpdir(), 'tern-ttr-'));
      try {
        const tag = `${i}-busy${n}`;
        const times = [await timeToReady(resolve(main), dataDir, `${tag}-first`)];
        for (let k = 0; k < restarts; k++)
          times.push(await timeToReady(resolve(main), dataDir, `${tag}-re${k}`));
        console.log(
          JSON.stringify({
            main,
            busy: n,
            load: loadavg(),
            firstMs: Math.round(times[0]!.ms),
            firstCpuMs: Math.round(times[0]!.cpuMs),
            restartMs: times.slice(1).map((t) => Math.round(t.ms)),
            restartCpuMs: times.slice(1).map((t) => Math.round(t.cpuMs)),
          }),
        );
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    for (const l of loops) if (l.pid) process.kill(-l.pid, 'SIGKILL');
  }
}
