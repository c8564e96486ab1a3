import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/**
 * Where the machine's CPU went during a measurement: the whole machine (os.cpus) and the
 * processes the benches care about (this process, the Kafka broker, the Postgres server, a load
 * generator), read from /proc. Linux only; elsewhere the per-process figures are empty.
 */
export interface CpuSnapshot {
  at: number;
  machineBusyMs: number;
  byGroup: Record<string, number>;
}

// Linux reports per-process times in clock ticks; USER_HZ is 100 on every mainstream kernel.
const TICK_MS = 10;

function processGroup(pid: number, extra: ReadonlyMap<number, string>): string | undefined {
  if (pid === process.pid) return 'bench process';
  const named = extra.get(pid);
  if (named) return named;
  try {
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    if (comm.startsWith('postgres')) return 'postgres';
    if (comm === 'java') {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmdline.includes('kafka')) return 'kafka broker';
    }
  } catch {
    // gone meanwhile
  }
  return undefined;
}

function processMs(pid: number, file = `/proc/${pid}/stat`): number {
  try {
    const stat = readFileSync(file, 'utf8');
    // Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** `extra` names further processes (pid → group), e.g. a spawned load generator. */
export function cpuSnapshot(extra: ReadonlyMap<number, string> = new Map()): CpuSnapshot {
  const machineBusyMs = cpus().reduce(
    (sum, c) => sum + c.times.user + c.times.nice + c.times.sys + c.times.irq,
    0,
  );
  const byGroup: Record<string, number> = {};
  let pids: number[] = [];
  try {
    pids = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    pids = [];
  }
  for (const pid of pids) {
    const group = processGroup(pid, extra);
    if (group) byGroup[group] = (byGroup[group] ?? 0) + processMs(pid);
  }
  return { at: performance.now(), machineBusyMs, byGroup };
}

/** CPU used between two snapshots, in percent of one core (200 % = both cores of this machine). */
export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot): Record<string, number> {
  const wall = b.at - a.at;
  const pct = (ms: number) => Math.round((ms / wall) * 100);
  const out: Record<string, number> = { machine: pct(b.machineBusyMs - a.machineBusyMs) };
  let known = 0;
  for (const [group, ms] of Object.entries(b.byGroup)) {
    const used = Math.max(0, ms - (a.byGroup[group] ?? 0));
    known += used;
    out[group] = pct(used);
  }
  out.other = Math.max(0, pct(b.machineBusyMs - a.machineBusyMs - known));
  return out;
}

/**
 * CPU time each process group spent per unit of work between two snapshots, in µs per item:
 * unlike throughput it hardly depends on what else the machine is running.
 */
export function cpuMicrosPer(a: CpuSnapshot, b: CpuSnapshot, items: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [group, ms] of Object.entries(b.byGroup)) {
    const used = Math.max(0, ms - (a.byGroup[group] ?? 0));
    if (used > 0) out[group] = Math.round((used * 1000) / items);
  }
  return out;
}

/**
 * CPU time of this process's main thread (its event loop) so far, in ms: the share a process's
 * figure leaves out of view when part of its work runs in libuv's or V8's threads.
 */
export function mainThreadMs(): number {
  return processMs(process.pid, `/proc/self/task/${process.pid}/stat`);
}
