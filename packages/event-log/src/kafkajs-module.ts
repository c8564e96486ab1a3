import { requireOnFirstUse } from '@tern/kernel';

/** kafkajs, loaded when a Kafka log is first made: a process on the Postgres-table log never loads it. */
export const kafkajs = requireOnFirstUse<typeof import('kafkajs')>(import.meta.url, 'kafkajs');
