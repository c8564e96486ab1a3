import { createKafkaEventLog } from '@tern/event-log';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServices, uniqueName } from '../../../test/support/services.js';
import { openPipeline, planArb, runPlan, ternReader } from './event-stream-order.suite.js';
import { openProjectionStores, type ProjectionStores } from './pipeline.suite.js';

describe('event stream order on Kafka', () => {
  let stores: ProjectionStores;
  let pipeline: Awaited<ReturnType<typeof openPipeline>>;
  let close: () => Promise<void>;
  beforeAll(async () => {
    stores = await openProjectionStores('stream-order-kafka', 10);
    const log = createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic: uniqueName('stream-order'),
      partitions: 4,
    });
    await log.ping();
    // Two projectors in one group: the partitions are split between them, batches commit concurrently.
    pipeline = await openPipeline(stores.pool, stores.ch.client, log, true);
    close = () => log.close();
  }, 120_000);
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
