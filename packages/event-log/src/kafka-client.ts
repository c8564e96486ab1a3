import type { Logger } from '@tern/kernel';
import type { logCreator } from 'kafkajs';
import { kafkajs } from './kafkajs-module.js';

/** kafkajs's own lines through Tern's logger, marked as kafkajs's. */
export function toKafkaLogCreator(logger: Logger): logCreator {
  const { logLevel } = kafkajs();
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, ...fields } = log;
      const obj = { component: 'kafkajs', namespace, ...fields };
      if (level === logLevel.ERROR) logger.error(obj, message);
      else if (level === logLevel.WARN) logger.warn(obj, message);
      else logger.info(obj, message);
    };
}

/**
 * What kafkajs's retrier will not retry it wraps as `KafkaJSNonRetriableError`, and a consumer whose
 * `eachBatch` throws that is stopped for good. Its runner rejoins the group on the protocol error
 * inside (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS): rethrow that one.
 */
export function rethrowCause(error: unknown): never {
  const e = error as { name?: string; cause?: unknown };
  throw e?.name === 'KafkaJSNonRetriableError' && e.cause ? e.cause : error;
}
