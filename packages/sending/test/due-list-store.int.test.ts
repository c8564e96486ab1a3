// The statements packages/sending owns for the sender's due-list and the Idempotency-Key of the
// send routes, on a real Postgres: the claim leases due rows once, a finish or a hand-back only
// touches rows still `sending`, a key is claimed once until it expires or is released.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import {
  claimDueSends,
  claimIdempotencyKey,
  clearOutcomes,
  finishSends,
  idempotencyKeyRow,
  markSendsCancelled,
  markSendsQueued,
  pendingOutcomes,
  planIdempotencyAnswer,
  pruneIdempotencyKeys,
  releaseIdempotencyKey,
  resolveIdempotencyKey,
  stillClaimed,
  storeIdempotencyAnswer,
  stuckCancellingSends,
  sweepUnqueuedSends,
  unclaimSends,
} from '../src/index.js';

let db: LogDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  db = await openLogDatabase();
  pool = db.pool;
}, 60_000);

afterAll(async () => {
  await db?.close();
});

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

async function row(tenant: string, id: string, state: string, bulk = false) {
  await pool.query(
    `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, bulk, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $4)`,
    [tenant, id, state, T0, JSON.stringify({ from: 'a@acme.test', to: 'b@example.com', subject: 'S' }), bulk],
  );
}

const stateOf = async (tenant: string, id: string) =>
  (
    await pool.query('SELECT state, attempts FROM outgoing_emails WHERE tenant_id = $1 AND id = $2', [
      tenant,
      id,
    ])
  ).rows[0];

describe('the due-list statements (due-list-store.ts)', () => {
  it('queued → claimed once with a lease → finished; a lost claim is not finished by its old attempt', async () => {
    await row('t1', 'e1', 'awaiting_log');
    await row('t1', 'e2', 'awaiting_log', true);
    expect(
      await markSendsQueued(
        pool,
        [
          { tenantId: 't1', emailId: 'e1' },
          { tenantId: 't1', emailId: 'e2' },
        ],
        at(0),
      ),
    ).toBe(2);
    // The claim returns rows in no particular order: sorted by id here.
    const byId = <R extends { id: string }>(rs: R[]) => rs.sort((a, b) => a.id.localeCompare(b.id));
    const claimed = byId(
      await claimDueSends(pool, { at: at(1), leaseMs: 10_000, limit: 10, exhausted: new Set() }),
    );
    expect(claimed.map((r) => [r.id, r.attempts, r.bulk])).toEqual([
      ['e1', 1, false],
      ['e2', 1, true],
    ]);
    expect(
      await claimDueSends(pool, { at: at(2), leaseMs: 10_000, limit: 10, exhausted: new Set() }),
    ).toEqual([]);
    // The leases expire: another instance claims both again (attempt 2); attempt 1 no longer owns them.
    const again = byId(
      await claimDueSends(pool, { at: at(12), leaseMs: 10_000, limit: 10, exhausted: new Set() }),
    );
    expect(again.map((r) => [r.id, r.attempts])).toEqual([
      ['e1', 2],
      ['e2', 2],
    ]);
    expect([...(await stillClaimed(pool, claimed))]).toEqual([]);
    expect((await stillClaimed(pool, again)).size).toBe(2);
    // Attempt 1's late finish (its lease lapsed) changes nothing and records nothing.
    expect(
      await finishSends(
        pool,
        [{ row: claimed[0]!, state: 'done', dueAt: null, error: null, events: [{ n: 0 }] }],
        at(12),
      ),
    ).toEqual([]);
    const recorded = await finishSends(
      pool,
      [
        { row: again[0]!, state: 'done', dueAt: null, error: null, events: [{ n: 1 }] },
        { row: again[1]!, state: 'pending', dueAt: at(60), error: '421', events: [{ n: 2 }, { n: 3 }] },
      ],
      at(13),
    );
    expect(recorded.map((o) => [o.email_id, o.attempt, o.events]).sort()).toEqual([
      ['e1', 2, [{ n: 1 }]],
      ['e2', 2, [{ n: 2 }, { n: 3 }]],
    ]);
    expect(await stateOf('t1', 'e1')).toEqual({ state: 'done', attempts: 2 });
    expect(await stateOf('t1', 'e2')).toEqual({ state: 'pending', attempts: 2 });
    // The outbox of outcomes (issue 49, item 1): kept until cleared, the oldest first.
    expect(await pendingOutcomes(pool, at(13), 10)).toEqual([]);
    expect((await pendingOutcomes(pool, at(14), 10)).map((o) => o.email_id).sort()).toEqual(['e1', 'e2']);
    await clearOutcomes(pool, recorded.slice(0, 1));
    expect(await pendingOutcomes(pool, at(14), 10)).toHaveLength(1);
    await clearOutcomes(pool, recorded);
    expect(await pendingOutcomes(pool, at(14), 10)).toEqual([]);
  });

  it('an exhausted tenant is left out; a handed-back row is due again with its attempt undone', async () => {
    await row('t2', 'r1', 'pending');
    await row('t3', 'r1', 'pending');
    const claimed = await claimDueSends(pool, {
      at: at(100),
      leaseMs: 10_000,
      limit: 10,
      exhausted: new Set(['t3', 't1']),
    });
    expect(claimed.map((r) => [r.tenant_id, r.id])).toEqual([['t2', 'r1']]);
    await unclaimSends(pool, claimed, { dueAt: at(101), at: at(100) });
    expect(await stateOf('t2', 'r1')).toEqual({ state: 'pending', attempts: 0 });
  });

  it('cancelling rows older than the cut-off are found, then marked cancelled', async () => {
    await row('t4', 'c1', 'cancelling');
    expect(await stuckCancellingSends(pool, T0)).toEqual([]);
    expect(await stuckCancellingSends(pool, at(1))).toEqual([{ tenant_id: 't4', id: 'c1' }]);
    await markSendsCancelled(pool, [{ tenant_id: 't4', id: 'c1' }]);
    expect((await stateOf('t4', 'c1')).state).toBe('cancelled');
  });

  it('a claim over a 20 000-row backlog walks the claim index (bulk, due_at) and reads about its limit', async () => {
    // Migration 0500 dropped the other index of pending rows (due_at alone): the claim's order is
    // this one's, so the scan stops at the limit instead of sorting the backlog.
    await pool.query(
      `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, bulk, updated_at)
       SELECT 't9', 'b' || lpad(i::text, 6, '0'), 'pending', $1::timestamptz - (i || ' ms')::interval, '{}', i % 2 = 0, $1
         FROM generate_series(1, 20000) AS i`,
      [T0],
    );
    await pool.query('ANALYZE outgoing_emails');
    // A connection of its own: a session's counters not yet flushed count in its `xact` figures.
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query('BEGIN');
      const claimed = await claimDueSends(c, {
        at: T0,
        leaseMs: 10_000,
        limit: 32,
        exhausted: new Set(),
      });
      const { rows: stats } = await c.query<{ indexrelname: string; idx_scan: number; idx_tup_read: number }>(
        `SELECT i.indexrelid::regclass::text AS indexrelname, pg_stat_get_xact_numscans(i.indexrelid)::int AS idx_scan,
                pg_stat_get_xact_tuples_returned(i.indexrelid)::int AS idx_tup_read
           FROM pg_index i WHERE i.indrelid = 'outgoing_emails'::regclass AND pg_stat_get_xact_numscans(i.indexrelid) > 0`,
      );
      const { rows: table } = await c.query<{ seq_scan: number }>(
        `SELECT seq_scan::int FROM pg_stat_xact_user_tables WHERE relname = 'outgoing_emails'`,
      );
      // Transactional rows (bulk false) first, then by due time: the 32 odd rows due earliest.
      expect(claimed.map((r) => r.id)).toEqual(
        Array.from({ length: 32 }, (_, k) => `b${String(20000 - 1 - 2 * k).padStart(6, '0')}`),
      );
      const claimIndex = stats.find((s) => s.indexrelname === 'outgoing_emails_claim_idx');
      expect(claimIndex?.idx_scan).toBeGreaterThan(0);
      expect(claimIndex?.idx_tup_read).toBeLessThanOrEqual(200);
      expect(table[0]?.seq_scan ?? 0).toBe(0);
      expect(stats.map((s) => s.indexrelname)).not.toContain('outgoing_emails_due_idx');
    } finally {
      await c.query('ROLLBACK');
      await c.end();
      await pool.query(`DELETE FROM outgoing_emails WHERE tenant_id = 't9'`);
    }
  });
});

describe('the Idempotency-Key statements (idempotency-keys.ts)', () => {
  const ref = { tenantId: 'ti', scope: '', key: 'k1' };
  const claim = (s: number) =>
    claimIdempotencyKey(pool, {
      ...ref,
      route: 'send',
      hash: 'h',
      at: at(s),
      expiredBefore: at(s - 100),
      staleBefore: at(s - 10),
    });

  it('claimed once; answered; released only without an answer; pruned when old', async () => {
    expect(await claim(0)).toBe(true);
    expect(await claim(1)).toBe(false);
    expect(await claim(11)).toBe(true); // unanswered and stale: free again
    await storeIdempotencyAnswer(pool, { ...ref, statusCode: 202, body: { id: 'x' } });
    expect(await idempotencyKeyRow(pool, ref)).toEqual({
      route: 'send',
      request_hash: 'h',
      status_code: 202,
      response: { id: 'x' },
      created_at: at(11),
      planned: null,
    });
    await releaseIdempotencyKey(pool, ref);
    expect(await idempotencyKeyRow(pool, ref)).toBeDefined();
    expect(await claim(50)).toBe(false); // answered: kept until it expires
    await pruneIdempotencyKeys(pool, at(12));
    expect(await idempotencyKeyRow(pool, ref)).toBeUndefined();
  });

  it('a planned answer (issue 49, item 2): never stale; answered once a row left awaiting_log, freed once its rows are gone', async () => {
    const planned = { statusCode: 202, body: { data: [{ id: 'p1' }, { id: 'p2' }] }, emailIds: ['p1', 'p2'] };
    const resolve = (createdAt: Date, deadBefore: Date) =>
      resolveIdempotencyKey(pool, { ...ref, createdAt, planned, deadBefore });
    expect(await claim(100)).toBe(true);
    await planIdempotencyAnswer(pool, { ...ref, planned });
    expect((await idempotencyKeyRow(pool, ref))?.planned).toEqual(planned);
    expect(await claim(115)).toBe(false); // stale, but planned: no longer freed by age alone
    // Its rows wait for the log: running, whatever the age.
    await row('ti', 'p1', 'awaiting_log');
    await row('ti', 'p2', 'awaiting_log');
    expect(await resolve(at(100), at(150))).toBe('running');
    // The sender consumed one email.queued: the log holds the request's outcome.
    await markSendsQueued(pool, [{ tenantId: 'ti', emailId: 'p1' }], at(101));
    expect(await resolve(at(99), at(150))).toBe('running'); // another claim's row: untouched…
    expect((await idempotencyKeyRow(pool, ref))?.status_code).toBeNull();
    expect(await resolve(at(100), at(150))).toBe('answered');
    expect(await idempotencyKeyRow(pool, ref)).toMatchObject({ status_code: 202, response: planned.body });
    // Another key whose rows were swept: freed once old enough, then claimed anew.
    const other = { ...ref, key: 'k2' };
    expect(
      await claimIdempotencyKey(pool, {
        ...other,
        route: 'send',
        hash: 'h',
        at: at(300),
        expiredBefore: at(0),
        staleBefore: at(290),
      }),
    ).toBe(true);
    const gone = { ...planned, emailIds: ['gone1'] };
    await planIdempotencyAnswer(pool, { ...other, planned: gone });
    const resolveOther = (deadBefore: Date) =>
      resolveIdempotencyKey(pool, { ...other, createdAt: at(300), planned: gone, deadBefore });
    expect(await resolveOther(at(299))).toBe('running');
    expect(await resolveOther(at(330))).toBe('released');
    expect(await idempotencyKeyRow(pool, other)).toBeUndefined();
  });
});

describe('the sweep of rows whose request died before the log (sweepUnqueuedSends)', () => {
  it('deletes awaiting_log rows older than the cut-off, nothing else', async () => {
    await row('ts', 'old', 'awaiting_log');
    await row('ts', 'queued', 'pending');
    await pool.query(`UPDATE outgoing_emails SET updated_at = $1 WHERE tenant_id = 'ts'`, [at(0)]);
    await row('ts', 'young', 'awaiting_log');
    await pool.query(`UPDATE outgoing_emails SET updated_at = $1 WHERE tenant_id = 'ts' AND id = 'young'`, [
      at(50),
    ]);
    const ofTs = (rows: { tenant_id: string; id: string }[]) => rows.filter((r) => r.tenant_id === 'ts');
    expect(ofTs(await sweepUnqueuedSends(pool, at(30), 10))).toEqual([{ tenant_id: 'ts', id: 'old' }]);
    expect(ofTs(await sweepUnqueuedSends(pool, at(30), 10))).toEqual([]);
    const { rows } = await pool.query(`SELECT id FROM outgoing_emails WHERE tenant_id = 'ts' ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(['queued', 'young']);
  });
});
