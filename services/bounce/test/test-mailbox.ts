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

/**
 * A sent email's row in the sender's due-list (`done`): what the mailbox finds a report's email
 * and its recipients by. `bcc` only when given.
 */
export async function insertSentEmail(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  to: string,
  cc: string[] = [],
  bcc?: string[],
): Promise<void> {
  const message = {
    from: 'news@acme.test',
    to,
    cc,
    ...(bcc === undefined ? {} : { bcc }),
    subject: 's',
    text: 't',
  };
  await pool.query(
    `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, attempts, message)
     VALUES ($1, $2, 'done', now(), 1, $3)`,
    [tenantId, id, JSON.stringify(message)],
  );
}
