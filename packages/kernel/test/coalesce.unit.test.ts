import { describe, expect, it } from 'vitest';
import { createCoalescer } from '../src/coalesce.js';

describe('createCoalescer (group commit of concurrent callers)', () => {
  it('runs a lone item at once; items queued while a batch runs go together in the next', async () => {
    const batches: number[][] = [];
    let release: () => void = () => undefined;
    const submit = createCoalescer<number>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await new Promise<void>((r) => (release = r));
    });
    const first = submit(1);
    await Promise.resolve();
    expect(batches).toEqual([[1]]);
    const rest = [submit(2), submit(3), submit(4)];
    expect(batches).toHaveLength(1);
    release();
    await Promise.all([first, ...rest]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('a failing batch fails each of its items, and the next batch still runs', async () => {
    let calls = 0;
    const submit = createCoalescer<string>(async (items) => {
      calls++;
      if (items.includes('bad')) throw new Error('log down');
    });
    const results = await Promise.allSettled([submit('bad'), submit('a'), submit('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(calls).toBe(2);
    await expect(submit('c')).resolves.toBeUndefined();
  });

  it('never puts more than maxBatch items in one batch', async () => {
    const sizes: number[] = [];
    const submit = createCoalescer<number>(async (items) => {
      sizes.push(items.length);
      await new Promise((r) => setTimeout(r, 1));
    }, 3);
    await Promise.all(Array.from({ length: 8 }, (_, i) => submit(i)));
    expect(sizes).toEqual([1, 3, 3, 1]);
  });
});
