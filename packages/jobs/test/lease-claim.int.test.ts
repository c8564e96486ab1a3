import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPool } from '../../../test/support/services.js';
import { leaseClaim } from '../src/lease-claim.js';

// A table shaped like the bulk jobs' (runs, trigger inbox, enrollments): tenant and id, a lease.
const db = freshPool({
  max: 2,
  prepare: async (pool) => {
    await pool.query(
      `CREATE TABLE runs (tenant_id text NOT NULL, id text NOT NULL, state text NOT NULL, due_at timestamptz NOT NULL,
                          lease_owner text, lease_until timestamptz, PRIMARY KEY (tenant_id, id))`,
    );
    await pool.query(
      `INSERT INTO runs (tenant_id, id, state, due_at) VALUES
         ('t1', 'a', 'active', '2026-01-01T00:00:03Z'), ('t1', 'b', 'active', '2026-01-01T00:00:01Z'),
         ('t2', 'c', 'done', '2026-01-01T00:00:00Z'), ('t2', 'd', 'active', '2026-01-01T00:01:00Z')`,
    );
  },
});
beforeAll(db.open);
afterAll(db.close);

const T0 = new Date('2026-01-01T00:00:10Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

describe('leaseClaim', () => {
  const claim = leaseClaim<{ id: string; lease_owner: string; n: number }>({
    table: 'runs',
    alias: 'r',
    ready: `state = 'active' AND due_at <= $3`,
    orderBy: 'due_at',
    returning: 'r.id, r.lease_owner',
    around: (c) => `WITH claimed AS (${c}) SELECT id, lease_owner, 1 AS n FROM claimed ORDER BY id`,
  });

  it('leases the ready, unleased rows, oldest first, at most batchSize, read through `around`', async () => {
    expect(await claim(db.pool, 'w1', at(30), at(0), 1)).toEqual([{ id: 'b', lease_owner: 'w1', n: 1 }]);
    expect(await claim(db.pool, 'w2', at(30), at(0), 5)).toEqual([{ id: 'a', lease_owner: 'w2', n: 1 }]);
    expect(await claim(db.pool, 'w3', at(30), at(29), 5)).toEqual([]);
  });

  it('hands a row on once its lease has lapsed', async () => {
    const { rows } = await db.pool.query('SELECT id FROM runs WHERE lease_until < $1 ORDER BY id', [at(31)]);
    expect(rows.map((r) => r.id)).toEqual(['a', 'b']);
    expect(await claim(db.pool, 'w4', at(90), at(31), 5)).toEqual([
      { id: 'a', lease_owner: 'w4', n: 1 },
      { id: 'b', lease_owner: 'w4', n: 1 },
    ]);
  });

  it('without `ready` or `around`, claims any unleased row and returns the claim itself', async () => {
    const any = leaseClaim<{ id: string }>({ table: 'runs', alias: 'r', orderBy: 'id', returning: 'r.id' });
    const claimed = await any(db.pool, 'w5', at(200), at(100), 5);
    expect(claimed.map((r) => r.id).sort()).toEqual(['a', 'b', 'c', 'd']);
  });
});
