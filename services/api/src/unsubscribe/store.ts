import type pg from 'pg';

/**
 * What an unsubscribe does (SPEC §13, §14), in one statement: the tenant's contact with that
 * address (if any) becomes `subscribed = false`, and the address joins the suppression list with
 * `reason: "unsubscribed"`, source `unsubscribe`. Idempotent: a second click changes nothing (the
 * first `unsubscribed_at` and an existing suppression, whatever its reason, are kept).
 */
export async function unsubscribeAddress(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  email: string,
  now: Date,
): Promise<void> {
  await db.query(
    `WITH contact AS (
       UPDATE contacts SET subscribed = false, unsubscribed_at = $3, updated_at = $3
        WHERE tenant_id = $1 AND email = $2 AND subscribed
       RETURNING id
     )
     INSERT INTO suppressions (tenant_id, email, reason, source, created_at)
     VALUES ($1, $2, 'unsubscribed', 'unsubscribe', $3)
     ON CONFLICT (tenant_id, email) DO NOTHING`,
    [tenantId, email.toLowerCase(), now],
  );
}
