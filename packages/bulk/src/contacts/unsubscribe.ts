import { createHash } from 'node:crypto';
import { erasedRecipientSql, isErased } from '@tern/privacy';
import { insertSuppressionSql } from '@tern/read-models';
import type pg from 'pg';

/**
 * The hash of an address `unsubscribe_sources` keys a campaign's or sequence's unsubscribe by
 * (an erasure re-keys it to the keyed hash: `rekeyErasedUnsubscribes`).
 */
const addressHash = (address: string) => createHash('sha256').update(address).digest('hex');

/**
 * What an unsubscribe does (SPEC §13, §14), in one statement: the tenant's contact with that
 * address (if any) becomes `subscribed = false`, and the address joins the suppression list with
 * `reason: "unsubscribed"`, source `unsubscribe` (packages/read-models' `insertSuppressionSql`).
 * Idempotent: a second click changes nothing (the first `unsubscribed_at` and an existing
 * suppression, whatever its reason, are kept).
 *
 * An address erased in the tenant (SPEC §14; issue 24 item 2) — an old link used after the
 * erasure — writes nothing in clear: its keyed hash (`recipientHash`, the keyring's) is already in
 * the erasure record (packages/privacy), which suppresses it; the statement makes sure it is, and
 * stops there.
 */
export async function unsubscribeAddress(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  email: string,
  now: Date,
  source?: string,
  recipientHash?: (tenantId: string, email: string) => string,
): Promise<void> {
  const address = email.toLowerCase();
  const rh = recipientHash?.(tenantId, address);
  if (rh !== undefined && (await isErased(db, tenantId, rh))) return;
  // Campaign and sequence mail count their unsubscribes (SPEC §15 stats) by a hash of the address.
  if (source !== undefined && /^(campaign|sequence):/.test(source)) {
    await db.query(
      `INSERT INTO unsubscribe_sources (tenant_id, source, email_hash, created_at)
       SELECT $1, $2, $3, $4
        WHERE EXISTS (SELECT 1 FROM contacts WHERE tenant_id = $1 AND email = $5 AND subscribed)
       ON CONFLICT DO NOTHING`,
      [tenantId, source, addressHash(address), now, address],
    );
  }
  await db.query(
    `WITH contact AS (
       UPDATE contacts SET subscribed = false, unsubscribed_at = $3, updated_at = $3
        WHERE tenant_id = $1 AND email = $2 AND subscribed
       RETURNING id
     )
     ${insertSuppressionSql(
       { tenantId: '$1', email: '$2', reason: `'unsubscribed'`, source: `'unsubscribe'`, createdAt: '$3' },
       `NOT ${erasedRecipientSql('$1', '$4')}`,
     )}`,
    [tenantId, address, now, rh ?? ''],
  );
}

/**
 * An erasure (SPEC §14): the recipient's campaign unsubscribe records are re-keyed from the hash
 * of the address to the keyed hash of the erasure (their count stays). Answers the rows re-keyed.
 */
export async function rekeyErasedUnsubscribes(
  db: Pick<pg.ClientBase, 'query'>,
  tenantId: string,
  address: string,
  recipientHash: string,
): Promise<number> {
  const r = await db.query(
    'UPDATE unsubscribe_sources SET email_hash = $3 WHERE tenant_id = $1 AND email_hash = $2',
    [tenantId, addressHash(address), `erased:${recipientHash}`],
  );
  return r.rowCount ?? 0;
}
