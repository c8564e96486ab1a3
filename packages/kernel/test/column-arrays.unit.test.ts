import { describe, expect, it } from 'vitest';
import { columnArrays } from '../src/index.js';

describe('columnArrays', () => {
  it('makes one array a key, in the order of the keys, each with the values row by row', () => {
    const rows = [
      { id: 'a', n: 1, at: null },
      { id: 'b', n: 2, at: new Date(0) },
    ];
    expect(columnArrays(rows, ['n', 'id', 'at'])).toEqual([
      [1, 2],
      ['a', 'b'],
      [null, new Date(0)],
    ]);
    expect(columnArrays([] as typeof rows, ['id', 'n'])).toEqual([[], []]);
  });
});
