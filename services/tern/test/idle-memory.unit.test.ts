import { describe, expect, it } from 'vitest';
import { createIdleMemoryRelease } from '../src/idle-memory.js';

const released = { rssKiB: { before: 2, after: 1 }, libraryBytes: 1, trimmed: true };

describe('createIdleMemoryRelease', () => {
  it('releases once per idle period, only after idleMs without activity', () => {
    let now = 0;
    let releases = 0;
    const idle = createIdleMemoryRelease({
      idleMs: 15_000,
      checkMs: 5_000,
      now: () => now,
      release: () => {
        releases++;
        return released;
      },
    });
    now = 14_999;
    expect(idle.check()).toBeUndefined();
    now = 15_000;
    expect(idle.check()).toBe(released);
    now = 60_000;
    expect(idle.check()).toBeUndefined();
    expect(releases).toBe(1);
    // Activity starts a new idle period.
    idle.touch();
    now = 70_000;
    expect(idle.check()).toBeUndefined();
    now = 75_000;
    expect(idle.check()).toBe(released);
    expect(releases).toBe(2);
  });

  it('a platform without libc access releases nothing and is not asked again in the period', () => {
    let now = 0;
    let calls = 0;
    const idle = createIdleMemoryRelease({
      idleMs: 10,
      checkMs: 5,
      now: () => now,
      release: () => {
        calls++;
        return null;
      },
    });
    now = 10;
    expect(idle.check()).toBeNull();
    now = 20;
    expect(idle.check()).toBeUndefined();
    expect(calls).toBe(1);
  });
});
