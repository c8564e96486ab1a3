import type pg from 'pg';

/**
 * The erasure record (`erased_recipients`, SPEC §14): the keyed hash of every address erased in a
 * tenant (`Keyring.recipientHash`), with the time. It is the audit record of the erasure and the
 * suppression a later send or unsubscribe meets; no clear address is kept.
 */

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * An `EXISTS (…)` predicate: the address whose keyed hash is `hashExpr` was erased in the tenant
 * `tenantExpr` (SQL expressions of the caller's statement). The suppression checks
 * (packages/read-models) and the unsubscribe statement (packages/bulk) embed it, so that check is
 * one round trip with theirs.
 */
export const erasedRecipientSql = (tenantExpr: string, hashExpr: string) =>
  `EXISTS (SELECT 1 FROM erased_recipients erased
            WHERE erased.tenant_id = ${tenantExpr} AND erased.recipient_hash = ${hashExpr})`;

/** True when the address of keyed hash `recipientHash` was erased in the tenant. */
export async function isErased(db: Queryable, tenantId: string, recipientHash: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM erased_recipients WHERE tenant_id = $1 AND recipient_hash = $2',
    [tenantId, recipientHash],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Records the erasure of the address of keyed hash `recipientHash` (in the erasure's transaction);
 * true the first time, false when it was erased before (the first record and its time stay).
 */
export async function recordErasure(
  db: Queryable,
  tenantId: string,
  recipientHash: string,
): Promise<boolean> {
  const first = await db.query(
    `INSERT INTO erased_recipients (tenant_id, recipient_hash) VALUES ($1, $2)
     ON CONFLICT DO NOTHING RETURNING 1`,
    [tenantId, recipientHash],
  );
  return (first.rowCount ?? 0) > 0;
}
