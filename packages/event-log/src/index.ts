export { createKafkaEventLog } from './kafka.js';
export type { KafkaEventLogOptions } from './kafka-options.js';
export { keyPartitioner } from './kafka-partition.js';
export { kafkajs } from './kafkajs-module.js';
export {
  type ConsumedRecord,
  type ConsumeOptions,
  type EventLog,
  type EventLogConsumer,
  type EventLogRecord,
  EventLogUnavailableError,
  type PartitionSpan,
} from './port.js';
export {
  createPostgresEventLog,
  EVENT_LOG_TABLE,
  type PostgresEventLog,
  type PostgresEventLogOptions,
} from './postgres.js';
export { pruneCommitted as pruneEventLog } from './postgres-sql.js';
export {
  createEventStream,
  type DeadLetter,
  type DeliveryEventAppender,
  decodeBatch,
  decodeRecords,
  type EventBatch,
  type EventSealer,
  type EventStream,
  encodeEvents,
  encodeRecords,
  hasReached,
  positionOfWrite,
  type StreamConsumeOptions,
} from './stream.js';
