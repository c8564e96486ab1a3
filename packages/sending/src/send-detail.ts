import type { EmailStatus } from '@tern/contracts';
import type { EmailState } from '@tern/domain';
import { emailLogRowSql } from '@tern/read-models';
import type pg from 'pg';

/**
 * The reads of one email that join its send row (`outgoing_emails`, `sandbox_messages`) with its
 * log entry in one statement: the log entry is packages/read-models' `emailLogRowSql` (the visible
 * entries). The api turns the rows into its responses.
 */

/** An email's visible log entry (its columns, null without one) and its send row (`o_*`, likewise). */
export type EmailDetailRow = {
  /** The log entry's id, else the send's; null when the tenant has neither. */
  id: string | null;
  state: EmailState | null;
  status: EmailStatus | null;
  provider: string | null;
  message_id: string | null;
  /** Null when the log has no visible entry of the email. */
  created_at: Date | null;
  o_message: Record<string, unknown> | null;
  o_state: string | null;
  o_scheduled_at: Date | null;
  o_project_id: string | null;
  o_created_at: Date | null;
};

/** `GET /emails/:id`'s row: the visible log entry and the send row of the email, either missing. */
export async function emailDetailRow(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  id: string,
): Promise<EmailDetailRow | null> {
  const { rows } = await db.query<EmailDetailRow>(
    `SELECT COALESCE(l.id, o.id) AS id, l.state, l.status, l.provider, l.message_id, l.created_at,
            o.message AS o_message, o.state AS o_state, o.scheduled_at AS o_scheduled_at,
            o.project_id AS o_project_id, o.created_at AS o_created_at
       FROM (SELECT $1::text AS tenant_id, $2::text AS id) k
       LEFT JOIN ${emailLogRowSql} l ON l.tenant_id = k.tenant_id AND l.id = k.id
       LEFT JOIN outgoing_emails o ON o.tenant_id = k.tenant_id AND o.id = k.id`,
    [tenantId, id],
  );
  return rows[0] ?? null;
}

/**
 * The project of an email the tenant knows (its send row, else its log entry), `null` when it has
 * none; `undefined` when the tenant has no such email. What project-bound keys are checked against.
 */
export async function emailProject(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  id: string,
): Promise<string | null | undefined> {
  const { rows } = await db.query<{ project_id: string | null }>(
    `SELECT project_id FROM outgoing_emails WHERE tenant_id = $1 AND id = $2
     UNION ALL
     SELECT l.project_id FROM ${emailLogRowSql} l WHERE l.tenant_id = $1 AND l.id = $2
     LIMIT 1`,
    [tenantId, id],
  );
  return rows.length === 0 ? undefined : (rows[0]!.project_id ?? null);
}

/**
 * The sandbox's kept message of an email, or null — also when the email was created before
 * `cutoff` (its log entry's `created_at`, else its send's).
 */
export async function sandboxContent(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  id: string,
  cutoff: Date,
): Promise<{ message: Record<string, unknown>; createdAt: Date } | null> {
  const { rows } = await db.query<{ message: Record<string, unknown>; created_at: Date }>(
    `SELECT s.message, s.created_at FROM sandbox_messages s
      WHERE s.tenant_id = $1 AND s.email_id = $2
        AND COALESCE(
              (SELECT l.created_at FROM ${emailLogRowSql} l WHERE l.tenant_id = $1 AND l.id = $2),
              (SELECT o.created_at FROM outgoing_emails o WHERE o.tenant_id = $1 AND o.id = $2),
              s.created_at) >= $3`,
    [tenantId, id, cutoff],
  );
  const r = rows[0];
  return r ? { message: r.message, createdAt: r.created_at } : null;
}
