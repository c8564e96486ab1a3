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

/**
 * `keepSandboxMessage` for many emails in one statement (the messages of one claim round). One row
 * per email: a retry of the same email in one batch keeps the last message.
 */
export async function keepSandboxMessages(
  db: Pick<pg.Pool, 'query'>,
  rows: readonly { tenantId: string; emailId: string; message: object }[],
): Promise<void> {
  const last = new Map(rows.map((r) => [`${r.tenantId}\u0000${r.emailId}`, r]));
  const unique = [...last.values()];
  await db.query(
    `INSERT INTO sandbox_messages (tenant_id, email_id, message)
     SELECT t, e, m::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS k(t, e, m)
     ON CONFLICT (tenant_id, email_id) DO UPDATE SET message = EXCLUDED.message, created_at = now()`,
    [
      unique.map((r) => r.tenantId),
      unique.map((r) => r.emailId),
      unique.map((r) => JSON.stringify(r.message)),
    ],
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
