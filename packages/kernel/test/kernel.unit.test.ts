import { describe, expect, it } from 'vitest';
import { backoffMs } from '../src/backoff.js';
import { onFirstUse } from '../src/first-use.js';
import { withTimeout } from '../src/timeout.js';

describe('backoffMs', () => {
  it('doubles from 100 ms after each failure in a row, at most 5 s by default', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => backoffMs(a))).toEqual([
      100, 200, 400, 800, 1600, 3200, 5000, 5000,
    ]);
  });

  it('takes its first wait and its ceiling from the caller (the poller: its interval and maxBackoffMs)', () => {
    expect([1, 2, 3, 4].map((a) => backoffMs(a, { initialMs: 250, maxMs: 1_000 }))).toEqual([
      250, 500, 1000, 1000,
    ]);
    expect(backoffMs(3, { initialMs: 0 })).toBe(0);
  });

  it('treats an attempt below 1 as the first', () => {
    expect(backoffMs(0)).toBe(100);
  });
});

describe('withTimeout', () => {
  it('settles as the promise does when it is in time', async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000)).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error('own')), 1_000)).rejects.toThrow('own');
  });

  it("rejects with Error('timeout'), or the caller's error, when the promise is late", async () => {
    const never = new Promise<never>(() => undefined);
    await expect(withTimeout(never, 10)).rejects.toThrow('timeout');
    class Late extends Error {}
    await expect(withTimeout(never, 10, () => new Late('late'))).rejects.toBeInstanceOf(Late);
  });
});

describe('onFirstUse', () => {
  it('loads nothing until first called, then once, and hands every caller the same module', () => {
    let loads = 0;
    const load = onFirstUse(() => ({ n: ++loads }));
    expect(loads).toBe(0);
    const first = load();
    expect(load()).toBe(first);
    expect(loads).toBe(1);
  });

  it('throws a failed load to its caller and tries again on the next call', () => {
    let calls = 0;
    const load = onFirstUse(() => {
      calls++;
      if (calls === 1) throw new Error('not installed');
      return 'loaded';
    });
    expect(() => load()).toThrow('not installed');
    expect(load()).toBe('loaded');
  });
});
