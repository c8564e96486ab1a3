import { runStreamOrderSuite } from './event-stream-order.suite.js';
import { openKafkaLog } from './pipeline.suite.js';

runStreamOrderSuite('Kafka', {
  storesName: 'stream-order-kafka',
  openLog: () => openKafkaLog('stream-order', 4),
  // Two projectors in one group: the partitions are split between them, batches commit concurrently.
  sameGroup: true,
  setupTimeoutMs: 120_000,
});
