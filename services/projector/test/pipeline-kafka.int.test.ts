import { createKafkaEventLog } from '@tern/event-log';
import { testServices, uniqueName } from '../../../test/support/services.js';
import { runPipelineSuite } from './pipeline.suite.js';

runPipelineSuite('Kafka', async () => {
  const log = createKafkaEventLog({
    brokers: testServices().kafkaBrokers,
    topic: uniqueName('pipeline'),
    partitions: 3,
  });
  await log.ping();
  return log;
});
