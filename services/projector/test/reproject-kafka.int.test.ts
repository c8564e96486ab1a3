import { createKafkaEventLog } from '@tern/event-log';
import { testServices, uniqueName } from '../../../test/support/services.js';
import { runReprojectSuite } from './reproject.suite.js';

// The replay reads the topic from its first offset under a new consumer group, across partitions,
// while the live projector (another group) and ingest keep going: the Kafka log of servers mode.
// The appender pauses 250 ms between posts (the Postgres-table variant: 15 ms): the hand-over
// starts once the replay has read to the end of every partition (lag 0), and on Kafka a replay
// batch (a fetch, the claim check, a chDB insert, an offset commit per partition) takes longer
// than 15 ms, so under a post every 15 ms it never sees the end (docs/analytics.md, "Limits").
runReprojectSuite(
  'Kafka',
  async () => {
    const log = createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic: uniqueName('reproject'),
      partitions: 3,
    });
    await log.ping();
    return log;
  },
  { replayBatchSize: 500, appendPauseMs: 250 },
);
