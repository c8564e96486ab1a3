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

/** Four claimers (two per pool) claiming 7 at a time until nothing is due: every row each got. */
async function claimByFour(claim: ClaimDueSpec): Promise<Row[]> {
  const claimer = async (pool: pg.Pool, owner: string): Promise<Row[]> => {
    const got: Row[] = [];
    for (;;) {
      const rows = await claimDue<Row>(pool, claim, [T0, at(60_000), owner, 7]);
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
  return results.flat();
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
    const all = (await claimByFour(spec)).map(key);
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

// Several due conditions (the sender's due-list: pending rows, and rows whose lease lapsed): one
// locking scan each, so a claim reads about `limit` rows however large the backlog.
describe('claimDue with several due conditions, on Postgres', () => {
  const states = (due: ClaimDueSpec['due']): ClaimDueSpec => ({
    table: 'states',
    alias: 's',
    keys: ['tenant_id', 'id'],
    due,
    orderBy: 'prio, due_at',
    limit: '$4',
    set: "state = 'sending', lease_until = $2, owner = $3, claims = s.claims + 1",
    returning: 's.tenant_id, s.id, s.owner',
  });
  const branches = states(["state = 'pending' AND due_at <= $1", "state = 'sending' AND lease_until < $1"]);
  const joined = states("(state = 'pending' AND due_at <= $1) OR (state = 'sending' AND lease_until < $1)");

  beforeAll(async () => {
    await poolA.query(`CREATE TABLE states (
      tenant_id text NOT NULL, id text NOT NULL, state text NOT NULL, prio boolean NOT NULL,
      due_at timestamptz NOT NULL, lease_until timestamptz, owner text, claims int NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant_id, id))`);
    await poolA.query(`CREATE INDEX states_claim_idx ON states (prio, due_at) WHERE state = 'pending'`);
    await poolA.query(`CREATE INDEX states_lease_idx ON states (lease_until) WHERE state = 'sending'`);
  });

  beforeEach(async () => {
    await poolA.query('TRUNCATE states');
  });

  /** `n` pending rows (every third one first in order), due before T0; `lapsed` rows in `sending` whose lease lapsed. */
  async function seedStates(n: number, lapsed: number): Promise<void> {
    await poolA.query(
      `INSERT INTO states (tenant_id, id, state, prio, due_at)
       SELECT 'ten_' || (i % 3), lpad(i::text, 6, '0'), 'pending', i % 3 <> 0, $1::timestamptz - (i || ' ms')::interval
         FROM generate_series(1, $2) AS i`,
      [T0, n],
    );
    await poolA.query(
      `INSERT INTO states (tenant_id, id, state, prio, due_at, lease_until, claims)
       SELECT 'ten_0', 'lapsed-' || i, 'sending', false, $1::timestamptz - interval '1 hour', $1::timestamptz - interval '1 s', 1
         FROM generate_series(1, $2) AS i`,
      [T0, lapsed],
    );
    await poolA.query('ANALYZE states');
  }

  /** The rows claimed, and the rows the claim's scans read (this transaction's own counts). */
  async function claimCounted(spec: ClaimDueSpec, limit: number) {
    const c = await poolA.connect();
    try {
      await c.query('BEGIN');
      const rows = await claimDue<Row>(c, spec, [T0, at(60_000), 'A', limit]);
      const { rows: read } = await c.query<{ n: number }>(
        `SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int AS n
           FROM pg_stat_xact_user_tables WHERE relname = 'states'`,
      );
      await c.query('COMMIT');
      return { rows, read: read[0]!.n };
    } finally {
      c.release();
    }
  }

  it('claims the first rows in claim order across the conditions, reading about `limit` rows of a 20 000-row backlog', async () => {
    await seedStates(20_000, 2);
    const { rows, read } = await claimCounted(branches, 32);
    // The two lapsed leases come first (prio false, due an hour ago), then pending rows of prio false.
    expect(
      rows
        .map((r) => r.id)
        .slice(0, 2)
        .sort(),
    ).toEqual(['lapsed-1', 'lapsed-2']);
    expect(rows).toHaveLength(32);
    const { rows: expected } = await poolA.query<{ id: string }>(
      `SELECT id FROM states WHERE id NOT LIKE 'lapsed-%' AND prio = false ORDER BY due_at LIMIT 30`,
    );
    expect(
      rows
        .slice(2)
        .map((r) => r.id)
        .sort(),
    ).toEqual(expected.map((r) => r.id).sort());
    expect(read).toBeLessThanOrEqual(200);
    // The same claim as one condition joined by OR reads the whole backlog.
    await poolA.query(
      "UPDATE states SET state = 'pending', lease_until = NULL, owner = NULL WHERE owner = 'A'",
    );
    expect((await claimCounted(joined, 32)).read).toBeGreaterThanOrEqual(20_000);
  });

  it('concurrent claimers never get the same row, and together get every due row once', async () => {
    await seedStates(300, 20);
    const all = (await claimByFour(branches)).map(key);
    expect(all).toHaveLength(320);
    expect(new Set(all).size).toBe(320);
    const { rows } = await poolA.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM states
        WHERE owner IS NULL OR claims <> CASE WHEN id LIKE 'lapsed-%' THEN 2 ELSE 1 END`,
    );
    expect(rows[0]?.n).toBe(0);
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
    expect(() => claimDueSql({ ...spec, due: [] })).toThrow(/due/);
    expect(() => claimDueSql({ ...spec, due: ['a', 'b'], orderBy: 'lower(id)' })).toThrow(/identifier/);
    expect(() => claimDueSql({ ...spec, due: ['a', 'b'], orderBy: 'due_at NULLS FIRST' })).toThrow(/orderBy/);
    expect(claimDueSql({ ...spec, due: ['a', 'b'], orderBy: 'due_at DESC, id' })).toContain(
      'SELECT tenant_id, id, due_at FROM jobs',
    );
  });
});
