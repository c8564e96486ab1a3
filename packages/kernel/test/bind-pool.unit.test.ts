import { describe, expect, it } from 'vitest';
import { bindPool } from '../src/index.js';

describe('bindPool', () => {
  it('hands each function the pool first, then the caller’s arguments, and returns its result', async () => {
    const pool = { name: 'pool' };
    const seen: unknown[][] = [];
    const repo = bindPool(pool, {
      get: async (db: typeof pool, tenantId: string, id: string) => {
        seen.push([db, tenantId, id]);
        return `${tenantId}/${id}`;
      },
      count: (db: typeof pool) => {
        seen.push([db]);
        return 3;
      },
    });
    expect(await repo.get('acme', 'tpl_1')).toBe('acme/tpl_1');
    expect(repo.count()).toBe(3);
    expect(seen).toEqual([[pool, 'acme', 'tpl_1'], [pool]]);
    expect(Object.keys(repo)).toEqual(['get', 'count']);
  });
});
