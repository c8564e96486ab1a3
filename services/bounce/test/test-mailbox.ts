// The bounce mailbox as its tests and the sender's VERP test open it: on 127.0.0.1, an ephemeral
// port, appending to a Postgres-table log, 64 KiB messages, 1 000 a minute; `over` adds or replaces
// options (the secret and the bounce domain are each test's own).
import { createEventStream, type PostgresEventLog } from '@tern/event-log';
import type pg from 'pg';
import { type BounceMailbox, type BounceMailboxOptions, createBounceMailbox } from '../src/index.js';

export function testMailbox(
  pool: pg.Pool,
  log: PostgresEventLog,
  over: Pick<BounceMailboxOptions, 'secret' | 'bounceDomain'> & Partial<BounceMailboxOptions>,
): BounceMailbox {
  return createBounceMailbox({
    pool,
    log: createEventStream(log),
    host: '127.0.0.1',
    port: 0,
    maxBytes: 64 * 1024,
    ratePerMinute: 1000,
    ...over,
  });
}
