import { describe, expect, it } from 'vitest';
import type { Figure } from './report.js';
import {
  compareRuntimes,
  formatComparison,
  interleavedRuns,
  labelRuntimes,
  median,
  medianOfRounds,
} from './runtimes.js';

const fig = (metric: string, value: number, variant = 'postgres'): Figure => ({
  bench: 'send',
  variant,
  metric,
  value,
  unit: '/s',
});

describe('interleavedRuns', () => {
  it('runs every runtime once a round, odd rounds reversed (A B, B A, A B)', () => {
    const order = interleavedRuns(['20', '24'], 3).map((r) => `${r.round}:${r.runtime}`);
    expect(order).toEqual(['0:20', '0:24', '1:24', '1:20', '2:20', '2:24']);
    expect(interleavedRuns(['20', '22', '24'], 2).map((r) => r.index)).toEqual([0, 1, 2, 2, 1, 0]);
  });
});

describe('medians and ratios', () => {
  it('median: the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([10, 20])).toBe(15);
    expect(median([])).toBeNaN();
  });

  it('a runtime’s rounds become one figure each, a figure missing from a round says so', () => {
    const merged = medianOfRounds([[fig('sends/s', 100), fig('p50', 8)], [fig('sends/s', 140)]]);
    expect(merged).toEqual([fig('sends/s', 120), { ...fig('p50', 8), note: 'measured in 1 of 2 rounds' }]);
  });

  it('last over first of the medians, and the ratio within each round', () => {
    const node20 = [[fig('sends/s', 100)], [fig('sends/s', 200)]];
    const node24 = [[fig('sends/s', 110)], [fig('sends/s', 250)]];
    const [row] = compareRuntimes([node20, node24]);
    expect(row).toMatchObject({ metric: 'sends/s', values: [150, 180], ratio: 1.2 });
    expect(row!.roundRatios).toEqual([1.1, 1.25]);
    const table = formatComparison([row!], ['v20.20.2', 'v24.22.3']);
    expect(table).toContain('postgres · v24.22.3 / v20.20.2');
    expect(table).toContain('sends/s (rounds: 1.10, 1.25)');
    expect(table).toMatch(/postgres · v20\.20\.2\s+sends\/s\s+150 \/s/);
  });

  it('no row for a figure the first runtime did not measure or measured as 0', () => {
    expect(compareRuntimes([[[fig('a', 0)]], [[fig('a', 5), fig('b', 1)]]])).toEqual([]);
    expect(compareRuntimes([[[fig('a', 1)]]])).toEqual([]);
  });

  it('two binaries of the same version are told apart by their path', () => {
    expect(
      labelRuntimes([
        { path: '/a/node', version: 'v24.1.0' },
        { path: '/b/node', version: 'v24.1.0' },
        { path: '/usr/bin/node', version: 'v20.20.2' },
      ]).map((r) => r.label),
    ).toEqual(['v24.1.0 (/a/node)', 'v24.1.0 (/b/node)', 'v20.20.2']);
  });
});
