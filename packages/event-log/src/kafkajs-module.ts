import { createRequire } from 'node:module';
import { onFirstUse } from '@tern/kernel';

const requireHere = createRequire(import.meta.url);

/** kafkajs, loaded when a Kafka log is first made: a process on the Postgres-table log never loads it. */
export const kafkajs = onFirstUse(() => requireHere('kafkajs') as typeof import('kafkajs'));
