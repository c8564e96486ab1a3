import { createKafkaEventLog } from '@tern/event-log';
import { testServices, uniqueName } from '../../../test/support/services.js';
import { runStreamOrderSuite } from './event-stream-order.suite.js';

runStreamOrderSuite('Kafka', {
  storesName: 'stream-order-kafka',
  openLog: async () => {
    const log = createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic: uniqueName('stream-order'),
      partitions: 4,
    });
    await log.ping();
    return log;
  },
  // Two projectors in one group: the partitions are split between them, batches commit concurrently.
  sameGroup: true,
  setupTimeoutMs: 120_000,
});
