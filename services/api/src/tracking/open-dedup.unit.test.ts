import { describe, expect, it } from 'vitest';
import { createOpenDedup } from './routes.js';

describe('createOpenDedup', () => {
  it('counts the first fetch of a reader, not its replays within the window; again after it', () => {
    const dedup = createOpenDedup(1000);
    const reader = ['acme', 'em_1', '203.0.113.7', 'Mozilla/5.0'];
    expect(dedup.first(reader, 0)).toBe(true);
    expect(dedup.first(reader, 1)).toBe(false);
    expect(dedup.first(reader, 999)).toBe(false);
    expect(dedup.first(reader, 1000)).toBe(true);
    expect(dedup.first(reader, 1500)).toBe(false);
  });

  it('another reader, email or tenant is its own open; parts cannot run into each other', () => {
    const dedup = createOpenDedup(1000);
    expect(dedup.first(['acme', 'em_1', '203.0.113.7', 'UA'], 0)).toBe(true);
    expect(dedup.first(['acme', 'em_1', '203.0.113.8', 'UA'], 0)).toBe(true);
    expect(dedup.first(['acme', 'em_1', '203.0.113.7', 'UA2'], 0)).toBe(true);
    expect(dedup.first(['acme', 'em_2', '203.0.113.7', 'UA'], 0)).toBe(true);
    expect(dedup.first(['acme2', 'em_1', '203.0.113.7', 'UA'], 0)).toBe(true);
    expect(dedup.first(['acme', 'em_1', '203.0.113.7U', 'A'], 0)).toBe(true);
  });

  it('window 0: every fetch is an open, nothing is kept', () => {
    const dedup = createOpenDedup(0);
    expect(dedup.first(['a'], 0)).toBe(true);
    expect(dedup.first(['a'], 0)).toBe(true);
    expect(dedup.size).toBe(0);
  });

  it('memory is bounded: expired entries go, and past the cap the oldest', () => {
    const dedup = createOpenDedup(1000, 3);
    for (const r of ['a', 'b', 'c']) expect(dedup.first([r], 0)).toBe(true);
    expect(dedup.size).toBe(3);
    expect(dedup.first(['d'], 10)).toBe(true);
    expect(dedup.size).toBe(3);
    // `a` (the oldest) was forgotten; `d` and `c` are still remembered.
    expect(dedup.first(['d'], 11)).toBe(false);
    expect(dedup.first(['c'], 11)).toBe(false);
    expect(dedup.first(['a'], 12)).toBe(true);
    // Past the window every entry has expired: one left, the new one.
    expect(dedup.first(['z'], 5000)).toBe(true);
    expect(dedup.size).toBe(1);
  });
});
