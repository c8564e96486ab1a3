import { createClickHouse, createPostgres, migrateClickHouse, migratePostgres } from '@tern/stores';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/services.js';
import { createRetentionJob } from '../src/index.js';

/**
 * Issue 9, item 8: on the embedded PGlite (one connection), the retention job must not hold the
 * connection for its whole run: a log read issued during the run is served between two batches.
 */
describe('retention job on the embedded PGlite', () => {
  const dataDir = tempDir('tern-retention-pglite-');
  let pg: Awaited<ReturnType<typeof createPostgres>>;
  let ch: ReturnType<typeof createClickHouse>;
  const ROWS = 5000;

  beforeAll(async () => {
    pg = await createPostgres({ dataDir });
    await migratePostgres(pg.pool);
    ch = createClickHouse({ dataDir });
    await migrateClickHouse(ch.client);
    await pg.pool.query(
      `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, created_at, state, version)
       SELECT 'old', 'e' || g, 'a@example.com', 's', 'SENT', '2020-01-01T00:00:00Z', '{}', 1
         FROM generate_series(1, $1) g`,
      [ROWS],
    );
  });
  afterAll(async () => {
    await ch?.close();
    await pg?.close();
  });

  it('runs in small transactions: a read during the run is answered before the run ends', async () => {
    const job = createRetentionJob({
      pool: pg.pool,
      ch: ch.client,
      now: () => new Date('2026-06-15T12:00:00Z'),
      defaultRetentionDays: 90,
      batchSize: 100,
    });
    const run = job.runOnce();
    await new Promise((r) => setTimeout(r, 30));
    // What a logs page would read meanwhile: answered between two batches, so the job is still
    // half-way (old code: after the whole run, when every row is gone).
    const during = await pg.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = 'old'",
    );
    const result = await run;
    expect(result).toMatchObject({ ran: true, deletedLogs: ROWS });
    expect(during.rows[0]!.n).toBeGreaterThan(0);
    expect(during.rows[0]!.n).toBeLessThan(ROWS + 1);
    const after = await pg.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM email_logs WHERE tenant_id = 'old'",
    );
    expect(after.rows[0]!.n).toBe(0);
  });
});
