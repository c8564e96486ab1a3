import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPipeline, planArb, runPlan, ternReader } from './event-stream-order.suite.js';
import { openPostgresTableLog, openProjectionStores, type ProjectionStores } from './pipeline.suite.js';

describe('event stream order on the Postgres-table log', () => {
  let stores: ProjectionStores;
  let pipeline: Awaited<ReturnType<typeof openPipeline>>;
  let close: () => Promise<void>;
  beforeAll(async () => {
    stores = await openProjectionStores('stream-order-pg', 10);
    const log = await openPostgresTableLog(stores.pool);
    pipeline = await openPipeline(stores.pool, stores.ch.client, log, false);
    close = () => log.close();
  });
  afterAll(async () => {
    await pipeline?.stop();
    await close?.();
    await stores?.close();
  });

  it('readers paging during concurrent appends see every event once, in the final order (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        expect(await runPlan(plan, pipeline.append, ternReader(stores.pool), pipeline.settled)).toBeNull();
      }),
      { numRuns: 6 },
    );
  }, 300_000);
});
