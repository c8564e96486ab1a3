import { describe, expect, it } from 'vitest';
import { closeInOrder } from '../src/shutdown.js';

describe('closeInOrder', () => {
  it('leaves a component that hangs behind at its share of the deadline and still closes the ones after it', async () => {
    const closed: string[] = [];
    const abandoned: string[] = [];
    const pendingSeen: string[][] = [];
    const started = Date.now();
    const result = await closeInOrder(
      [
        { name: 'http', close: async () => void closed.push('http') },
        { name: 'sender', close: () => new Promise(() => {}) },
        { name: 'broken', close: async () => Promise.reject(new Error('boom')) },
        { name: 'postgres', close: async () => void closed.push('postgres') },
      ],
      {
        deadlineAt: started + 400,
        onAbandoned: (name) => abandoned.push(name),
        onPending: (names) => pendingSeen.push([...names]),
      },
    );
    expect(result).toEqual({ unfinished: ['sender'] });
    expect(abandoned).toEqual(['sender']);
    expect(closed).toEqual(['http', 'postgres']);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(pendingSeen[0]).toEqual(['http', 'sender', 'broken', 'postgres']);
    expect(pendingSeen.at(-1)).toEqual(['sender']);
  });

  it('without a deadline waits for each component', async () => {
    const closed: string[] = [];
    const slow = (name: string) => ({
      name,
      close: () => new Promise<void>((r) => setTimeout(() => r(void closed.push(name)), 20)),
    });
    expect(await closeInOrder([slow('a'), slow('b')])).toEqual({ unfinished: [] });
    expect(closed).toEqual(['a', 'b']);
  });
});
