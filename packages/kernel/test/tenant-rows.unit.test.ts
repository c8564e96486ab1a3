import { describe, expect, it } from 'vitest';
import { deleteTenantRow, tenantRecords } from '../src/index.js';

/** A pool that records each statement and answers with `rows` (and `rowCount`). */
function fakeDb(answers: { rows: unknown[]; rowCount?: number }[]) {
  const seen: [string, unknown[]][] = [];
  return {
    seen,
    query: async (sql: string, params: unknown[]) => {
      seen.push([sql.replace(/\s+/g, ' '), params]);
      return answers.shift()!;
    },
  } as never as { seen: [string, unknown[]][]; query: import('pg').Pool['query'] };
}

const things = tenantRecords<{ id: string; n: string }, { id: string; n: number }>({
  table: 'things',
  columns: 'id, n',
  map: (r) => ({ id: r.id, n: Number(r.n) }),
});

describe('tenantRecords', () => {
  it("get reads the tenant's row by id and maps it; null when there is none", async () => {
    const db = fakeDb([{ rows: [{ id: 't1', n: '2' }] }, { rows: [] }]);
    expect(await things.get(db, 'acme', 't1')).toEqual({ id: 't1', n: 2 });
    expect(await things.get(db, 'acme', 't2')).toBeNull();
    expect(db.seen).toEqual([
      ['SELECT id, n FROM things WHERE tenant_id = $1 AND id = $2', ['acme', 't1']],
      ['SELECT id, n FROM things WHERE tenant_id = $1 AND id = $2', ['acme', 't2']],
    ]);
  });

  it('newestFirst maps one newest-first page and counts the total', async () => {
    const db = fakeDb([{ rows: [{ id: 't2', n: '3' }] }, { rows: [{ total: '7' }] }]);
    expect(await things.newestFirst(db, 'acme', { limit: 1, offset: '1' })).toEqual({
      items: [{ id: 't2', n: 3 }],
      total: 7,
    });
    expect(db.seen[0]).toEqual([
      'SELECT id, n FROM things WHERE tenant_id = $1 ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2 OFFSET $3::bigint',
      ['acme', 1, '1'],
    ]);
  });
});

describe('deleteTenantRow', () => {
  it("deletes the tenant's row by id: true when one went, false when there was none", async () => {
    const db = fakeDb([
      { rows: [], rowCount: 1 },
      { rows: [], rowCount: 0 },
    ]);
    expect(await deleteTenantRow(db, 'things', 'acme', 't1')).toBe(true);
    expect(await deleteTenantRow(db, 'things', 'acme', 't1')).toBe(false);
    expect(db.seen[0]).toEqual(['DELETE FROM things WHERE tenant_id = $1 AND id = $2', ['acme', 't1']]);
  });
});
