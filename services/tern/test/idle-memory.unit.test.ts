import { describe, expect, it } from 'vitest';
import { createIdleMemoryRelease } from '../src/idle-memory.js';

const released = { rssKiB: { before: 2, after: 1 }, libraryBytes: 1, trimmed: true };

/** An idle release on a clock the test sets (`at`), whose release answers `result`; `calls` counts them. */
function idleRelease(idleMs: number, checkMs: number, result: typeof released | null) {
  let now = 0;
  let calls = 0;
  const idle = createIdleMemoryRelease({
    idleMs,
    checkMs,
    now: () => now,
    release: () => {
      calls++;
      return result;
    },
  });
  return {
    idle,
    at: (ms: number) => {
      now = ms;
    },
    calls: () => calls,
  };
}

describe('createIdleMemoryRelease', () => {
  it('releases once per idle period, only after idleMs without activity', () => {
    const { idle, at, calls } = idleRelease(15_000, 5_000, released);
    at(14_999);
    expect(idle.check()).toBeUndefined();
    at(15_000);
    expect(idle.check()).toBe(released);
    at(60_000);
    expect(idle.check()).toBeUndefined();
    expect(calls()).toBe(1);
    // Activity starts a new idle period.
    idle.touch();
    at(70_000);
    expect(idle.check()).toBeUndefined();
    at(75_000);
    expect(idle.check()).toBe(released);
    expect(calls()).toBe(2);
  });

  it('a platform without libc access releases nothing and is not asked again in the period', () => {
    const { idle, at, calls } = idleRelease(10, 5, null);
    at(10);
    expect(idle.check()).toBeNull();
    at(20);
    expect(idle.check()).toBeUndefined();
    expect(calls()).toBe(1);
  });
});
