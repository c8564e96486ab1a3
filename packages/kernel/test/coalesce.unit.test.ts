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
  it('runs up to `concurrency` batches at once; what queues meanwhile goes together, in order', async () => {
    const batches: number[][] = [];
    const releases: (() => void)[] = [];
    let running = 0;
    let most = 0;
    const submit = createCoalescer<number>(
      async (items) => {
        batches.push(items);
        running++;
        most = Math.max(most, running);
        await new Promise<void>((r) => releases.push(r));
        running--;
      },
      256,
      { concurrency: 2 },
    );
    const all = [submit(1), submit(2), submit(3), submit(4), submit(5)];
    await Promise.resolve();
    expect(batches).toEqual([[1], [2]]);
    releases.shift()!();
    await new Promise((r) => setTimeout(r, 0));
    expect(batches).toEqual([[1], [2], [3, 4, 5]]);
    while (releases.length > 0) releases.shift()!();
    await Promise.all(all);
    expect(most).toBe(2);
  });

  it('bounds a batch by the items’ total weight, and still takes one heavier item alone', async () => {
    const batches: number[][] = [];
    const submit = createCoalescer<number>(
      async (items) => {
        batches.push(items);
        await new Promise((r) => setTimeout(r, 1));
      },
      10,
      { weight: (n) => n },
    );
    await Promise.all([1, 4, 5, 2, 12, 3].map((n) => submit(n)));
    expect(batches).toEqual([[1], [4, 5], [2], [12], [3]]);
    for (const b of batches) if (b.length > 1) expect(b.reduce((a, n) => a + n, 0)).toBeLessThanOrEqual(10);
  });

  it('retryAlone: a failing batch runs again item by item, and only the item failing alone is refused', async () => {
    const batches: number[][] = [];
    const submit = createCoalescer<number>(
      async (items) => {
        batches.push(items);
        await new Promise((r) => setTimeout(r, 1));
        if (items.includes(3)) throw new Error(`bad ${items.join(',')}`);
      },
      256,
      { retryAlone: true },
    );
    const outcomes = await Promise.allSettled([1, 2, 3, 4].map((n) => submit(n)));
    expect(batches).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[2] as PromiseRejectedResult).reason.message).toBe('bad 3');
    // Without it, the batch's failure is every item's.
    const all = createCoalescer<number>(async (items) => {
      await new Promise((r) => setTimeout(r, 1));
      if (items.includes(3)) throw new Error('bad');
    });
    const plain = await Promise.allSettled([1, 2, 3, 4].map((n) => all(n)));
    expect(plain.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected']);
  });
});
