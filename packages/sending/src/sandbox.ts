import type pg from 'pg';

/**
 * What the sandbox provider keeps (`sandbox_messages`, SPEC §11): the message it was handed, per
 * email, read back by `GET /emails/:id/content` and by the retry of a `delayed@` send.
 */
export async function keepSandboxMessage(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  emailId: string,
  message: object,
): Promise<void> {
  await db.query(
    `INSERT INTO sandbox_messages (tenant_id, email_id, message) VALUES ($1, $2, $3::jsonb)
     ON CONFLICT (tenant_id, email_id) DO UPDATE SET message = EXCLUDED.message, created_at = now()`,
    [tenantId, emailId, JSON.stringify(message)],
  );
}

/** True when the sandbox kept a message of this email (a first try happened). */
export async function hasSandboxMessage(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  emailId: string,
): Promise<boolean> {
  const kept = await db.query('SELECT 1 FROM sandbox_messages WHERE tenant_id = $1 AND email_id = $2', [
    tenantId,
    emailId,
  ]);
  return (kept.rowCount ?? 0) > 0;
}
