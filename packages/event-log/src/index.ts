export { createKafkaEventLog, type KafkaEventLogOptions } from './kafka.js';
export {
  type ConsumedRecord,
  type ConsumeOptions,
  type EventLog,
  type EventLogConsumer,
  type EventLogRecord,
  EventLogUnavailableError,
} from './port.js';
export { createPostgresEventLog, type PostgresEventLog, type PostgresEventLogOptions } from './postgres.js';
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
  type StreamConsumeOptions,
} from './stream.js';
