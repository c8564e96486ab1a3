import type { ReleasedMemory } from '@tern/stores';

/**
 * Gives memory back once the process has been idle for `idleMs` (no request, no projected batch):
 * once per idle period, so a busy process never pays for it and an idle one pays once. What is
 * released and why: `releaseIdleMemory` (packages/stores/src/memory.ts).
 */
export interface IdleMemoryRelease {
  /** Something happened: the idle period starts again. */
  touch(): void;
  /** Releases when idle long enough and not yet released in this idle period; returns what it did. */
  check(): ReleasedMemory | null | undefined;
  start(): void;
  stop(): void;
}

export interface IdleMemoryReleaseOptions {
  idleMs: number;
  /** How often `check` runs once started. */
  checkMs: number;
  now: () => number;
  release: () => ReleasedMemory | null;
  onRelease?: (released: ReleasedMemory) => void;
}

export function createIdleMemoryRelease(opts: IdleMemoryReleaseOptions): IdleMemoryRelease {
  let lastActivity = opts.now();
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    if (released || opts.now() - lastActivity < opts.idleMs) return undefined;
    released = true;
    const result = opts.release();
    if (result) opts.onRelease?.(result);
    return result;
  };
  return {
    touch() {
      lastActivity = opts.now();
      released = false;
    },
    check,
    start() {
      timer ??= setInterval(check, opts.checkMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
