import { openKafkaLog } from './pipeline.suite.js';
import { runReprojectSuite } from './reproject.suite.js';

// The replay reads the topic from its first offset under a new consumer group, across partitions,
// while the live projector (another group) and ingest keep going: the Kafka log of servers mode.
// The appender posts every 15 ms, as on the Postgres table: a replay batch on Kafka (a fetch, the
// claim check, a chDB insert, an offset commit per partition) takes longer than that, so the lag is
// never 0 when looked at; the hand-over reads to a snapshot of each partition's end instead
// (docs/analytics.md). Waiting for a zero lag, this suite did not hand over within 300 s.
runReprojectSuite('Kafka', () => openKafkaLog('reproject', 3), { replayBatchSize: 50, appendPauseMs: 15 });
