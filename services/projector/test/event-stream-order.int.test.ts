import { createEventPageCache } from '@tern/read-models';
import { migratePostgres } from '@tern/stores';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase } from '../../../test/support/services.js';
import {
  planArb,
  projectorTransaction,
  type ReadPage,
  runPlan,
  ternReader,
} from './event-stream-order.suite.js';

/**
 * The stream's order under concurrent projector transactions, each held open a random few ms:
 * Tern's per-tenant head lock keeps every reader's sequence equal to the final order; the naive
 * design — a global sequence (bigserial) taken at insert and read as `id > cursor` — skips a row
 * whose transaction commits after a later one was read, and this same property finds it.
 */
describe('event stream order under concurrent projector transactions', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createFreshDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 10 });
    pool.on('error', () => undefined);
    await migratePostgres(pool);
    // The naive design, test-only: the reader pages by a sequence value taken at insert.
    await pool.query(`CREATE TABLE naive_stream (id bigserial PRIMARY KEY, tenant_id text, event_id text)`);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('every reader sees every event once, in the final order (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        expect(await runPlan(plan, projectorTransaction(pool), ternReader(pool))).toBeNull();
      }),
      { numRuns: 12 },
    );
  }, 240_000);

  it('and through the page cache of GET /events, each page read twice (fast-check)', async () => {
    const cache = createEventPageCache();
    const cached = ternReader(pool, cache.page);
    // Each page twice: the second read is answered from memory whenever the stream allows it.
    const twice: ReadPage = async (tenantId, after, limit) => {
      await cached(tenantId, after, limit);
      return cached(tenantId, after, limit);
    };
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        expect(await runPlan(plan, projectorTransaction(pool), twice)).toBeNull();
      }),
      { numRuns: 12 },
    );
    expect(cache.stats().hits).toBeGreaterThan(0);
  }, 240_000);

  it('the same property fails against a naive sequence read (the property can fail)', async () => {
    const naiveAppend = async (events: { tenantId: string; id: string }[]) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          'INSERT INTO naive_stream (tenant_id, event_id) SELECT * FROM unnest($1::text[], $2::text[])',
          [events.map((e) => e.tenantId), events.map((e) => e.id)],
        );
        await client.query('SELECT pg_sleep($1)', [Math.random() * 0.02]);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    };
    const naiveRead: ReadPage = async (tenantId, after, limit) => {
      const { rows } = await pool.query<{ id: string; event_id: string }>(
        'SELECT id::text, event_id FROM naive_stream WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3',
        [tenantId, after ?? '0', limit],
      );
      return { ids: rows.map((r) => r.event_id), next: rows.at(-1)?.id ?? after };
    };
    const result = await fc.check(
      fc.asyncProperty(planArb, async (plan) => (await runPlan(plan, naiveAppend, naiveRead)) === null),
      { numRuns: 30, endOnFailure: true },
    );
    expect(result.failed).toBe(true);
  }, 240_000);
});
