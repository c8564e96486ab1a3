import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPool, waitFor } from '../../../test/support/services.js';
import { claimDue } from '../src/claim-due.js';
import { createLeasedJob, type LeasedJobContext } from '../src/leased-job.js';

// The skeleton the campaign fan-out and the sequence scheduler share, on a table shaped like theirs.
const db = freshPool({
  max: 4,
  prepare: async (pool) => {
    await pool.query(
      `CREATE TABLE leased (id text PRIMARY KEY, lease_owner text, lease_until timestamptz, done boolean NOT NULL DEFAULT false)`,
    );
    await pool.query(`INSERT INTO leased (id) SELECT 'r' || g FROM generate_series(1, 5) g`);
  },
});
beforeAll(db.open);
afterAll(db.close);

const claimOne = (job: LeasedJobContext, at: Date) =>
  claimDue<{ id: string }>(
    db.pool,
    {
      table: 'leased',
      due: 'NOT done AND (lease_until IS NULL OR lease_until < $3)',
      orderBy: 'id',
      limit: 1,
      set: 'lease_owner = $1, lease_until = $2',
    },
    [job.owner, job.leaseUntil(at), at],
  );

describe('createLeasedJob', () => {
  it('rounds claim under its owner until nothing is due; stop() ends the round and hands its leases back', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const owners = new Set<string>();
    const job = createLeasedJob({
      name: 'leased-test',
      pool: db.pool,
      table: 'leased',
      leaseMs: 60_000,
      pollIntervalMs: 10,
      async run(ctx) {
        let n = 0;
        for (;;) {
          if (ctx.stopping()) return n;
          const [row] = await claimOne(ctx, new Date());
          if (!row) return n;
          owners.add(ctx.owner);
          // The third row is held (a unit of work in flight) until the test stops the job.
          if (row.id === 'r3') await held;
          else
            await db.pool.query('UPDATE leased SET done = true, lease_owner = NULL WHERE id = $1', [row.id]);
          n++;
        }
      },
      onError: (error) => {
        throw error;
      },
    });
    job.start();
    const leased = async () =>
      (
        await db.pool.query<{ id: string; lease_owner: string | null }>(
          `SELECT id, lease_owner FROM leased WHERE lease_owner IS NOT NULL`,
        )
      ).rows;
    const holding = await waitFor(async () => ((await leased()).length === 1 ? await leased() : undefined));
    expect(holding.map((r) => r.id)).toEqual(['r3']);
    expect([...owners]).toHaveLength(1);
    expect(holding[0]!.lease_owner).toBe([...owners][0]);
    expect(holding[0]!.lease_owner).toMatch(/^leased-test-[0-9a-f]{16}$/);
    const stopping = job.stop();
    release();
    await stopping;
    // The round returned after r3 (r4, r5 untouched) and r3's lease went back at once.
    expect(await leased()).toEqual([]);
    const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM leased WHERE done ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual(['r1', 'r2']);
  });
});
