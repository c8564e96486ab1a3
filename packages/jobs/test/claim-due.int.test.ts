import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFreshDatabase } from '../../../test/support/services.js';
import { type ClaimDueSpec, claimDue, claimDueSql } from '../src/claim-due.js';

// A table shaped like the job tables of Tern: a composite key, a due time, a lease.
const spec: ClaimDueSpec = {
  table: 'jobs',
  alias: 'j',
  keys: ['tenant_id', 'id'],
  due: 'due_at <= $1 AND (lease_until IS NULL OR lease_until < $1)',
  orderBy: 'due_at, id',
  limit: '$4',
  set: 'lease_until = $2, owner = $3, claims = j.claims + 1',
  returning: 'j.tenant_id, j.id, j.owner',
};

interface Row {
  tenant_id: string;
  id: string;
  owner: string;
}

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const key = (r: Row) => `${r.tenant_id}/${r.id}`;

let db: { url: string; drop(): Promise<void> };
let poolA: pg.Pool;
let poolB: pg.Pool;

beforeAll(async () => {
  db = await createFreshDatabase();
  poolA = new pg.Pool({ connectionString: db.url, max: 4 });
  poolB = new pg.Pool({ connectionString: db.url, max: 4 });
  // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
  for (const pool of [poolA, poolB]) pool.on('error', () => undefined);
  await poolA.query(`CREATE TABLE jobs (
    tenant_id text NOT NULL, id text NOT NULL, due_at timestamptz NOT NULL,
    lease_until timestamptz, owner text, claims int NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id))`);
});

afterAll(async () => {
  await poolA?.end();
  await poolB?.end();
  await db?.drop();
});

beforeEach(async () => {
  await poolA.query('TRUNCATE jobs');
});

async function seed(n: number): Promise<void> {
  await poolA.query(
    `INSERT INTO jobs (tenant_id, id, due_at)
     SELECT 'ten_' || (i % 3), lpad(i::text, 5, '0'), $1::timestamptz - (i || ' ms')::interval
       FROM generate_series(1, $2) AS i`,
    [T0, n],
  );
}

describe('claimDue on Postgres', () => {
  it('a claimer holding its claim open does not block another, which gets other rows', async () => {
    await seed(20);
    const a = await poolA.connect();
    try {
      await a.query('BEGIN');
      const first = await claimDue<Row>(a, spec, [T0, at(60_000), 'A', 5]);
      // A's transaction is still open: its rows are locked, B skips them instead of waiting.
      const second = await claimDue<Row>(poolB, spec, [T0, at(60_000), 'B', 5]);
      await a.query('COMMIT');
      expect(first).toHaveLength(5);
      expect(second).toHaveLength(5);
      const both = new Set([...first, ...second].map(key));
      expect(both.size).toBe(10);
    } finally {
      a.release();
    }
  });

  it('concurrent claimers never get the same row, and together get every due row once', async () => {
    await seed(300);
    const claimer = async (pool: pg.Pool, owner: string): Promise<Row[]> => {
      const got: Row[] = [];
      for (;;) {
        const rows = await claimDue<Row>(pool, spec, [T0, at(60_000), owner, 7]);
        if (rows.length === 0) return got;
        got.push(...rows);
      }
    };
    const results = await Promise.all([
      claimer(poolA, 'A1'),
      claimer(poolA, 'A2'),
      claimer(poolB, 'B1'),
      claimer(poolB, 'B2'),
    ]);
    const all = results.flat().map(key);
    expect(all).toHaveLength(300);
    expect(new Set(all).size).toBe(300);
    const { rows } = await poolA.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobs WHERE claims <> 1 OR owner IS NULL',
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('a leased row is not claimable until its lease lapses; then another claimer takes it', async () => {
    await seed(1);
    const [mine] = await claimDue<Row>(poolA, spec, [T0, at(10_000), 'A', 10]);
    expect(mine?.owner).toBe('A');
    expect(await claimDue<Row>(poolB, spec, [at(5_000), at(15_000), 'B', 10])).toEqual([]);
    const taken = await claimDue<Row>(poolB, spec, [at(10_001), at(20_000), 'B', 10]);
    expect(taken.map((r) => [key(r), r.owner])).toEqual([[key(mine!), 'B']]);
    const { rows } = await poolA.query('SELECT claims FROM jobs');
    expect(rows[0]?.claims).toBe(2);
  });

  it('leaves rows that are not due yet', async () => {
    await poolA.query(`INSERT INTO jobs (tenant_id, id, due_at) VALUES ('t', 'late', $1)`, [at(1_000)]);
    expect(await claimDue<Row>(poolA, spec, [T0, at(60_000), 'A', 10])).toEqual([]);
    expect(await claimDue<Row>(poolA, spec, [at(1_000), at(60_000), 'A', 10])).toHaveLength(1);
  });
});

describe('claimDueSql', () => {
  it('refuses identifiers and limits that are not plain', () => {
    expect(() => claimDueSql({ ...spec, table: 'jobs; DROP TABLE x' })).toThrow(/identifier/);
    expect(() => claimDueSql({ ...spec, keys: ['id', 'a b'] })).toThrow(/identifier/);
    expect(() => claimDueSql({ ...spec, keys: [] })).toThrow(/keys/);
    expect(() => claimDueSql({ ...spec, limit: 0 })).toThrow(/limit/);
    expect(() => claimDueSql({ ...spec, limit: '4' })).toThrow(/limit/);
    expect(claimDueSql(spec)).toContain('FOR UPDATE SKIP LOCKED');
  });
});
