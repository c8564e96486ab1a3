import type pg from 'pg';

/** The email log's small reads for other modules (visible: its `email.queued` is known). */

/** True when the tenant's email is visible in the log. */
export async function emailIsVisible(
  db: pg.Pool | pg.ClientBase,
  tenantId: string,
  id: string,
): Promise<boolean> {
  const known = await db.query(
    'SELECT 1 FROM email_logs WHERE tenant_id = $1 AND id = $2 AND created_at IS NOT NULL',
    [tenantId, id],
  );
  return (known.rowCount ?? 0) > 0;
}

/** True when any visible email of the tenant names the project (index email_logs_tenant_project_created_idx). */
export async function projectHasEmails(
  db: pg.Pool | pg.ClientBase,
  tenantId: string,
  projectId: string,
): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM email_logs
      WHERE tenant_id = $1 AND project_id = $2 AND created_at IS NOT NULL
      LIMIT 1`,
    [tenantId, projectId],
  );
  return rows.length > 0;
}
