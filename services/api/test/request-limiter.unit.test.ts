import { describe, expect, it } from 'vitest';
import { createRequestLimiter } from '../src/request-limiter.js';

describe('createRequestLimiter', () => {
  it('counts per key in a window opened by the first request, and opens a new one after it', () => {
    let t = 1_000;
    const limiter = createRequestLimiter({ timeWindowMs: 60_000 }, { now: () => t });
    expect(limiter.hit('a')).toEqual({ current: 1, resetSeconds: 60 });
    t += 1_500;
    expect(limiter.hit('a')).toEqual({ current: 2, resetSeconds: 59 });
    expect(limiter.hit('b')).toEqual({ current: 1, resetSeconds: 60 });
    t = 1_000 + 60_000; // the window of `a` ends here
    expect(limiter.hit('a')).toEqual({ current: 1, resetSeconds: 60 });
  });

  it('keeps the most recently seen keys only', () => {
    const limiter = createRequestLimiter({ timeWindowMs: 60_000 }, { maxKeys: 2, now: () => 0 });
    limiter.hit('a');
    limiter.hit('b');
    limiter.hit('a');
    limiter.hit('c'); // `b`, the least recently seen, is dropped
    expect(limiter.hit('a').current).toBe(3);
    expect(limiter.hit('b').current).toBe(1);
  });
});
