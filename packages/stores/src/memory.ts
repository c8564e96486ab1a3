import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { type Logger, silentLogger } from '@tern/kernel';

/**
 * Memory of the all-in-one process with embedded stores (issue 10: idle RSS ≤ 400 MB). What a
 * `npm start` process holds after `seed:demo`, measured (`bench/idle-rss.sh`, docs/architecture.md):
 *
 * - ≈ 190 MiB of `libchdb.so` (566 MB on disk) mapped from the file: the loader reads its 31 MiB
 *   relocation table and chDB's static constructors touch code all over its 400 MiB of text, once,
 *   at load. Clean file pages, never needed again unless a query runs that code;
 * - glibc malloc arenas holding memory chDB's threads freed.
 *
 * `releaseIdleMemory` is for an idle process: glibc hands its free memory back (`malloc_trim`) and
 * the kernel drops libchdb.so's resident file pages (`madvise(MADV_DONTNEED)` on its read-only
 * mappings, never on one holding anonymous pages such as the relocated RELRO segment); a page chDB
 * uses later is read back from the page cache on its first touch.
 *
 * libc is reached through koffi (a C FFI). Where that is not possible — not Linux, not glibc, no
 * koffi binary for the platform — nothing is released and that is said once.
 */

const MADV_DONTNEED = 4;

interface Libc {
  mallocTrim(pad: number): number;
  madvise(addr: bigint, length: bigint, advice: number): number;
}

let libc: Libc | null | undefined;

function loadLibc(logger: Logger): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== 'linux') return libc;
  // glibc only: musl has no malloc_trim.
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  if (!report?.header?.glibcVersionRuntime) return libc;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load('libc.so.6');
    const mallocTrim = lib.func('int malloc_trim(size_t pad)');
    const madvise = lib.func('int madvise(uintptr_t addr, size_t length, int advice)');
    libc = {
      mallocTrim: (pad) => mallocTrim(pad) as number,
      madvise: (addr, length, advice) => madvise(addr, length, advice) as number,
    };
  } catch (error) {
    logger.info({ err: String(error) }, 'memory: libc not reachable through koffi; no idle release');
  }
  return libc;
}

export interface ReleasedMemory {
  /** RSS before and after, KiB (/proc/self/status). */
  rssKiB: { before: number; after: number };
  /** Bytes of libchdb.so's read-only mappings given back to the page cache. */
  libraryBytes: number;
  /** Whether glibc returned free memory to the system. */
  trimmed: boolean;
}

/** A mapping of /proc/self/smaps. */
interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  path: string;
  anonymousKiB: number;
}

function mappings(): Mapping[] {
  const out: Mapping[] = [];
  let current: Mapping | undefined;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      current = {
        start: BigInt(`0x${head[1]}`),
        end: BigInt(`0x${head[2]}`),
        perms: head[3] ?? '',
        path: head[4] ?? '',
        anonymousKiB: 0,
      };
      out.push(current);
    } else if (current && line.startsWith('Anonymous:')) {
      current.anonymousKiB = Number.parseInt(line.slice('Anonymous:'.length), 10) || 0;
    }
  }
  return out;
}

export function rssKiB(): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) : 0;
}

/**
 * Gives memory an idle process does not use back to the system: glibc's free memory, and the
 * resident pages of the read-only mappings of the shared libraries whose path matches `libraries`
 * (chDB's). Returns null where libc is not reachable. Never throws.
 */
export function releaseIdleMemory(
  libraries: RegExp = /\/libchdb\.so$/,
  logger: Logger = silentLogger,
): ReleasedMemory | null {
  const c = loadLibc(logger);
  if (c === null) return null;
  try {
    const before = rssKiB();
    const trimmed = c.mallocTrim(0) === 1;
    let libraryBytes = 0;
    for (const m of mappings()) {
      // Read-only and holding no anonymous (written, copy-on-write) page: the file has every byte.
      if (!libraries.test(m.path) || (m.perms !== 'r--p' && m.perms !== 'r-xp') || m.anonymousKiB > 0)
        continue;
      if (c.madvise(m.start, m.end - m.start, MADV_DONTNEED) === 0) libraryBytes += Number(m.end - m.start);
    }
    return { rssKiB: { before, after: rssKiB() }, libraryBytes, trimmed };
  } catch (error) {
    logger.warn({ err: String(error) }, 'memory: idle release failed');
    return null;
  }
}

/**
 * Bounds how far V8 lets the heap grow past what its last full collection kept before it collects
 * again: a growing factor of 1 + `percent`/100 (V8's `--heap-growing-percent`), where V8's own rule
 * goes up to 4 for a process that allocates fast — a busy Tern process, whose live set stays near
 * 40–70 MiB, otherwise lets garbage reach 250–300 MiB between full collections (issue 45, item 3;
 * docs/architecture.md "The heap under load"). `0` leaves V8's rule. V8 reads the flag each time it
 * sets the next limit, so it takes effect from the next full collection on; the process's entry
 * calls it once, before any load.
 */
export function boundHeapGrowth(percent: number): void {
  setFlagsFromString(heapGrowthFlag(percent));
}

/** V8's flag that `boundHeapGrowth` sets, for a process started with it (`npm run bench`'s children). */
export function heapGrowthFlag(percent: number): string {
  if (!Number.isInteger(percent) || percent < 0)
    throw new RangeError(`heap growth must be a whole percent ≥ 0: ${percent}`);
  return `--heap-growing-percent=${percent}`;
}
