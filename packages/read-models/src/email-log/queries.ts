import type pg from 'pg';
import { fullStateSql } from './stored-state.js';

/** The email log's small reads for other modules (visible: its `email.queued` is known). */

/**
 * The visible log entries as a relation, embedded by the statements of other owners that join an
 * email's log entry in one statement: packages/sending's `GET /emails/:id` detail, project and
 * sandbox-content reads, packages/bulk's `mailStats`. Columns: `tenant_id`, `id`, `state` (the fold
 * state), `status`, `provider`, `message_id`, `project_id`, `created_at`, and the human
 * `open_count`, `click_count`, `complaint_count` of the fold (0 when none).
 */
export const emailLogRowSql = `(SELECT e.tenant_id, e.id, ${fullStateSql('e')} AS state, e.status, e.provider, e.message_id,
          e.project_id, e.created_at,
          COALESCE((e.state->>'openCount')::int, 0) AS open_count,
          COALESCE((e.state->>'clickCount')::int, 0) AS click_count,
          COALESCE((e.state->>'complaintCount')::int, 0) AS complaint_count
     FROM email_logs e WHERE e.created_at IS NOT NULL)`;

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
