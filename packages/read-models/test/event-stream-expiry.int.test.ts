// The event stream's retention (`expireEventStream`, SPEC §25) on a Postgres server and on PGlite:
// it deletes each tenant's events recorded before the cut-off and nothing else, in batches, for one
// tenant or for every tenant but some, and remembers the last seq it deleted. Since migration 0510
// it finds them by seq, not by a time index: on the server, a tenant whose oldest event is kept
// costs one row read, however many it keeps.
import { withTransaction } from '@tern/kernel';
import pg from 'pg';
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import { expireEventStream } from '../src/index.js';

const T0 = new Date('2026-03-01T00:00:00Z');
const ms = (n: number) => new Date(T0.getTime() + n);

onEveryPostgres('the event stream expiry', (db, kind) => {
  /** Events `from`..`to` of `tenant`, event n recorded at T0 + n ms (time grows with seq, as appended). */
  async function stream(tenant: string, from: number, to: number): Promise<void> {
    await db().query(
      `INSERT INTO event_stream (tenant_id, seq, event_id, email_id, type, recorded_at, body)
       SELECT $1, i, $1 || '-ev-' || i, 'em-' || i, 'email.sent', $2::timestamptz + i * interval '1 ms', '{}'
         FROM generate_series($3::int, $4::int) AS i`,
      [tenant, T0, from, to],
    );
    await db().query(
      `INSERT INTO event_stream_heads (tenant_id, last_seq) VALUES ($1, $2)
       ON CONFLICT (tenant_id) DO UPDATE SET last_seq = EXCLUDED.last_seq`,
      [tenant, to],
    );
  }
  const seqs = async (tenant: string) =>
    (
      await db().query<{ seq: string }>('SELECT seq FROM event_stream WHERE tenant_id = $1 ORDER BY seq', [
        tenant,
      ])
    ).rows.map((r) => Number(r.seq));
  const expiredThrough = async (tenant: string) =>
    Number(
      (
        await db().query<{ e: string }>(
          'SELECT expired_through AS e FROM event_stream_heads WHERE tenant_id = $1',
          [tenant],
        )
      ).rows[0]?.e,
    );

  it('deletes what was recorded before the cut-off, of the tenants in scope only', async () => {
    await stream('x-a', 1, 8);
    await stream('x-b', 6, 9); // recorded after the cut-off only
    await stream('x-c', 1, 3);
    const gone = await withTransaction(db(), (c) => expireEventStream(c, { allBut: ['x-c'] }, ms(6)));
    expect(gone).toBe(5);
    expect(await seqs('x-a')).toEqual([6, 7, 8]);
    expect(await seqs('x-b')).toEqual([6, 7, 8, 9]);
    expect(await seqs('x-c')).toEqual([1, 2, 3]);
    expect([await expiredThrough('x-a'), await expiredThrough('x-b'), await expiredThrough('x-c')]).toEqual([
      5, 0, 0,
    ]);
    expect(await withTransaction(db(), (c) => expireEventStream(c, { tenantId: 'x-c' }, ms(6)))).toBe(3);
    expect(await seqs('x-c')).toEqual([]);
    expect(await expiredThrough('x-c')).toBe(3);
    // Again: nothing left to delete.
    expect(await withTransaction(db(), (c) => expireEventStream(c, { allBut: [] }, ms(6)))).toBe(0);
  });

  it('goes on past one batch of 5 000, across tenants', async () => {
    await stream('y-a', 1, 7_000);
    await stream('y-b', 1, 4_000);
    const gone = await withTransaction(db(), (c) =>
      expireEventStream(c, { allBut: ['x-a', 'x-b', 'x-c'] }, ms(6_001)),
    );
    expect(gone).toBe(6_000 + 4_000);
    expect(await seqs('y-a')).toEqual([6_001, ...Array.from({ length: 999 }, (_, i) => 6_002 + i)]);
    expect(await seqs('y-b')).toEqual([]);
    expect([await expiredThrough('y-a'), await expiredThrough('y-b')]).toEqual([6_000, 4_000]);
  });

  if (kind === 'server')
    it('reads one row of a tenant whose oldest event is kept, and not the kept ones of a tenant it trims', async () => {
      await stream('z-kept', 1_000, 21_000); // all recorded after the cut-off
      await stream('z-trim', 1, 21_000); // the first 10 before it
      await db().query('ANALYZE event_stream');
      // A connection of its own: a session's counters not yet flushed count in its `xact` figures.
      const c = new pg.Client({
        connectionString: (db() as unknown as { options: pg.PoolConfig }).options.connectionString,
      });
      await c.connect();
      try {
        await c.query('BEGIN');
        const gone = await expireEventStream(c, { tenantId: 'z-kept' }, ms(11));
        const kept = await c.query<{ n: number }>(
          `SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int AS n
             FROM pg_stat_xact_user_tables WHERE relname = 'event_stream'`,
        );
        expect(gone).toBe(0);
        // One row read by the statement; the planner's look at the ends of the primary key
        // (`get_actual_variable_range`) may fetch a few more where the tests above left deleted
        // entries (4 measured, planning alone, in 1 run of 7); a scan of the tenant reads 20 000.
        expect(kept.rows[0]?.n).toBeLessThanOrEqual(20);
        expect(await expireEventStream(c, { tenantId: 'z-trim' }, ms(11))).toBe(10);
        const trimmed = await c.query<{ n: number }>(
          `SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int AS n
             FROM pg_stat_xact_user_tables WHERE relname = 'event_stream'`,
        );
        // The first batch's window (5 000 rows by seq) at most, not the tenant's 21 000.
        expect(trimmed.rows[0]?.n).toBeLessThanOrEqual(5_100);
        await c.query('COMMIT');
      } finally {
        await c.end();
      }
      expect((await seqs('z-trim'))[0]).toBe(11);
    });
});
