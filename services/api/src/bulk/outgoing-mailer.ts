import type pg from 'pg';
import { type AppendOnlyLog, type BulkMailer, queuedEvent } from './mail.js';

/**
 * The real send path for campaign and sequence mail (SPEC §11 + §15): like `POST /emails/send`,
 * the content goes to `outgoing_emails` first (state `awaiting_log`, the sender's due-list), then
 * `email.queued` is appended; the sender consumes it, marks the row due, sends and appends the
 * outcome. Idempotent per email id: a row that exists is left alone (`ON CONFLICT DO NOTHING`),
 * and a re-appended `email.queued` (same event id) is dropped by the projector and ignored by the
 * sender (it only moves rows still `awaiting_log`). The message is stored rendered (no
 * `templateId`), so the sender sends it as is; the event keeps the `templateId` for analytics.
 */
export function outgoingMailer(pool: Pick<pg.Pool, 'query'>, log: AppendOnlyLog): BulkMailer {
  return {
    async enqueue(tenantId, mails, at) {
      if (mails.length === 0) return;
      await pool.query(
        `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, scheduled_at, project_id, created_at, updated_at)
         SELECT $1, i, 'awaiting_log', $4, m, NULL, NULL, $4, $4
           FROM unnest($2::text[], $3::jsonb[]) AS u(i, m)
         ON CONFLICT (tenant_id, id) DO NOTHING`,
        [
          tenantId,
          mails.map((m) => m.id),
          mails.map((m) =>
            JSON.stringify({
              from: m.from,
              to: m.to,
              subject: m.subject,
              ...(m.html !== null ? { html: m.html } : {}),
              ...(m.text !== null ? { text: m.text } : {}),
              headers: m.headers,
              tags: m.tags,
            }),
          ),
          at,
        ],
      );
      await log.append(
        mails.map((m) => ({ key: m.id, value: JSON.stringify(queuedEvent(tenantId, m, at)) })),
      );
    },
  };
}
