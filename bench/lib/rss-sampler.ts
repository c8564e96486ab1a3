/**
 * A process's memory read from outside: VmRSS and VmHWM of /proc/<pid>/status, sampled every
 * `intervalMs` (default 100 ms) into marked phases, so a bench prints the baseline, the peak of
 * each phase and the RSS some time after.
 */
import { readFileSync } from 'node:fs';

export interface MemorySample {
  rssMiB: number;
  hwmMiB: number;
}

/** VmRSS and VmHWM (the high-water mark the kernel keeps) of `pid`, MiB; undefined once it exited. */
export function readMemory(pid: number): MemorySample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

export interface RssSampler {
  /** Starts a new phase: the samples from now on count for `name`. */
  phase(name: string): void;
  /** Per phase: samples taken, highest VmRSS, VmHWM at its last sample, VmRSS at its last sample. */
  summary(): Record<string, { samples: number; peakMiB: number; hwmMiB: number; lastMiB: number }>;
  stop(): void;
}

export function sampleRss(pid: number, intervalMs = 100): RssSampler {
  const phases = new Map<string, { samples: number; peakMiB: number; hwmMiB: number; lastMiB: number }>();
  let current = 'start';
  const take = () => {
    const m = readMemory(pid);
    if (!m) return;
    const p = phases.get(current) ?? { samples: 0, peakMiB: 0, hwmMiB: 0, lastMiB: 0 };
    p.samples++;
    p.peakMiB = Math.max(p.peakMiB, m.rssMiB);
    p.hwmMiB = m.hwmMiB;
    p.lastMiB = m.rssMiB;
    phases.set(current, p);
  };
  const timer = setInterval(take, intervalMs);
  take();
  return {
    phase(name) {
      take();
      current = name;
      take();
    },
    summary: () => Object.fromEntries(phases),
    stop: () => clearInterval(timer),
  };
}
