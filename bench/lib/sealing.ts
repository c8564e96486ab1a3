import type { EventLog, EventStream } from '@tern/event-log';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import type pg from 'pg';

/** The ENCRYPTION_KEY of every bench keyring (the databases holding the keys are the bench's own). */
export const BENCH_ENCRYPTION_KEY = 'bench-encryption-key-0123456789abcdef-0123';

/**
 * The event stream as servers mode and `npm start` hand it to every service (services/tern/src/runtime.ts):
 * email.queued's personal fields sealed on append and opened on consume, the data keys in the
 * `data_keys` table of `keys`' (migrated) database. Each call has a keyring of its own with a cold
 * cache, as a separate process would.
 */
export function sealedAsRuntime(log: EventLog, keys: pg.Pool): EventStream {
  return sealedEventStream(log, createKeyring({ pool: keys, encryptionKey: BENCH_ENCRYPTION_KEY }));
}
