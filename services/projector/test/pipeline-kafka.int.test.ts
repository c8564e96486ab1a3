import { createKafkaEventLog } from '@tern/event-log';
import { runPipelineSuite, suffix } from './pipeline.suite.js';

const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');

runPipelineSuite('Kafka', async () => {
  const log = createKafkaEventLog({ brokers, topic: `pipeline-${suffix()}`, partitions: 3 });
  await log.ping();
  return log;
});
