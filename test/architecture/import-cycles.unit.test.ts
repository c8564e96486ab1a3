import { describe, expect, it } from 'vitest';
import { cycles, workspaceCycles } from './import-cycles.js';

describe('no import cycle inside a workspace', () => {
  it('finds none in services/*/{src,web} and packages/*/{src,web}', () => {
    expect(workspaceCycles(), 'move the shared types or functions into a module both import').toEqual([]);
  });

  it('finds a cycle, type-only or not, and none in a tree', () => {
    const cyclic = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
    ]);
    expect(cycles(cyclic)).toEqual([['a', 'b', 'c', 'a']]);
    const tree = new Map([
      ['a', ['b', 'c']],
      ['b', ['c']],
      ['c', []],
    ]);
    expect(cycles(tree)).toEqual([]);
  });
});
