import {
  type DeliveryEvent,
  type EmailDetail,
  type EmailStatus,
  type emailTimelineEventSchema,
  envelopeOf,
  recipientsOf,
} from '@tern/contracts';
import { type EmailState, queuedStatus, recipientOutcomes } from '@tern/domain';
import { bindPool, type PoolBound } from '@tern/jobs';
import { emailIsVisible, timelineOf } from '@tern/read-models';
import type pg from 'pg';
import type { z } from 'zod';

/** SQL of sending (SPEC §11): plain functions over a pool and the tenant id; no HTTP here. */

export type CancelOutcome = 'cancelled' | 'already_cancelled' | 'handed' | 'not_found';

/**
 * Cancels an email not yet handed to the provider: its row becomes `cancelling` (never claimed
 * again), then the caller appends email.cancelled and calls `markCancelled`.
 */
export async function cancelOutgoing(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  at: Date,
): Promise<CancelOutcome> {
  const { rows } = await pool.query<{ before: string | null; after: string | null; attempts: number }>(
    `WITH target AS (
       SELECT state, attempts FROM outgoing_emails WHERE tenant_id = $1 AND id = $2
     ), changed AS (
       UPDATE outgoing_emails SET state = 'cancelling', updated_at = $3
        WHERE tenant_id = $1 AND id = $2 AND state IN ('awaiting_log', 'pending') AND attempts = 0
        RETURNING state
     )
     SELECT (SELECT state FROM target) AS before, (SELECT state FROM changed) AS after,
            COALESCE((SELECT attempts FROM target), 0) AS attempts`,
    [tenantId, id, at],
  );
  const r = rows[0];
  if (!r || r.before === null) {
    // An email Tern did not send itself (posted to POST /events) cannot be cancelled here.
    return (await emailIsVisible(pool, tenantId, id)) ? 'handed' : 'not_found';
  }
  if (r.after === 'cancelling') return 'cancelled';
  if (r.before === 'cancelling' || r.before === 'cancelled') return 'already_cancelled';
  return 'handed';
}

export async function markCancelled(pool: pg.Pool, tenantId: string, id: string): Promise<void> {
  await pool.query(
    `UPDATE outgoing_emails SET state = 'cancelled' WHERE tenant_id = $1 AND id = $2 AND state = 'cancelling'`,
    [tenantId, id],
  );
}

type DetailRow = {
  id: string;
  state: EmailState | Record<string, never> | null;
  status: EmailStatus | null;
  provider: string | null;
  message_id: string | null;
  created_at: Date | null;
  o_message: Record<string, unknown> | null;
  o_state: string | null;
  o_scheduled_at: Date | null;
  o_project_id: string | null;
  o_created_at: Date | null;
};

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * `GET /emails/:id`: the log entry, the send's details and the timeline. An email accepted but
 * not yet projected is shown from its send row (QUEUED or SCHEDULED, no events yet). An email
 * created before `cutoff` (the tenant's retention, SPEC §9) is not found, as in the logs.
 */
export async function emailDetail(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  cutoff: Date,
): Promise<EmailDetail | null> {
  const { rows } = await pool.query<DetailRow>(
    `SELECT COALESCE(l.id, o.id) AS id, l.state, l.status, l.provider, l.message_id, l.created_at,
            o.message AS o_message, o.state AS o_state, o.scheduled_at AS o_scheduled_at,
            o.project_id AS o_project_id, o.created_at AS o_created_at
       FROM (SELECT $1::text AS tenant_id, $2::text AS id) k
       LEFT JOIN email_logs l ON l.tenant_id = k.tenant_id AND l.id = k.id AND l.created_at IS NOT NULL
       LEFT JOIN outgoing_emails o ON o.tenant_id = k.tenant_id AND o.id = k.id`,
    [tenantId, id],
  );
  const row = rows[0];
  if (!row || row.id === null) return null;
  const state = row.created_at !== null ? (row.state as EmailState) : null;
  const m = row.o_message ?? {};
  if (state === null || state.queued === null) {
    if (row.o_created_at === null || row.o_created_at < cutoff) return null;
    const scheduled = row.o_scheduled_at;
    const status = scheduled !== null && scheduled > row.o_created_at ? 'SCHEDULED' : 'QUEUED';
    return {
      id,
      // An erased recipient's send keeps no content (null), SPEC §14.
      toEmail: recipientsOf(m.to)[0] ?? null,
      subject: str(m.subject),
      status,
      to: recipientsOf(m.to),
      recipients: recipientOutcomes(envelopeOf(m), [], status),
      provider: null,
      messageId: null,
      createdAt: row.o_created_at.toISOString(),
      tags: strings(m.tags),
      from: str(m.from),
      cc: strings(m.cc),
      bcc: strings(m.bcc),
      replyTo: str(m.replyTo),
      scheduledAt: scheduled?.toISOString() ?? null,
      projectId: row.o_project_id,
      templateId: str(m.templateId),
      opens: 0,
      clicks: 0,
      events: [],
    };
  }
  if (row.created_at !== null && row.created_at < cutoff) return null;
  const events = await timelineOf(pool, tenantId, id);
  const q = state.queued;
  // The send's recipients (an email posted to POST /events has no send: its toEmail alone).
  const envelope =
    row.o_message !== null
      ? envelopeOf(m)
      : q.toEmail !== null
        ? [{ address: q.toEmail, kind: 'to' as const }]
        : [];
  const timeline = events.map(
    (e) =>
      ({
        id: e.event_id,
        tenantId,
        emailId: id,
        type: e.type,
        occurredAt: e.occurred_at.toISOString(),
        data: e.data,
      }) as DeliveryEvent,
  );
  return {
    id,
    toEmail: q.toEmail,
    subject: q.subject,
    status: row.status ?? 'QUEUED',
    to: row.o_message !== null ? recipientsOf(m.to) : q.toEmail !== null ? [q.toEmail] : [],
    recipients: recipientOutcomes(envelope, timeline, queuedStatus(q)),
    provider: row.provider,
    messageId: row.message_id,
    createdAt: q.createdAt,
    tags: [...q.tags],
    from: q.from,
    cc: strings(m.cc),
    bcc: strings(m.bcc),
    replyTo: str(m.replyTo),
    // The send row holds when the email goes out (a reschedule moves it); the queued event, the first ask.
    scheduledAt: row.o_scheduled_at?.toISOString() ?? q.scheduledAt,
    projectId: row.o_project_id ?? q.projectId ?? null,
    templateId: q.templateId,
    opens: state.openCount,
    clicks: state.clickCount,
    events: events.map(
      (e): z.infer<typeof emailTimelineEventSchema> => ({
        type: e.type as z.infer<typeof emailTimelineEventSchema>['type'],
        occurredAt: e.occurred_at.toISOString(),
        data: e.data,
      }),
    ),
  };
}

/**
 * The project of an email the tenant knows (its send row, else its log entry), `null` when it has
 * none; `undefined` when the tenant has no such email. What project-bound keys are checked against.
 */
export async function emailProject(
  pool: pg.Pool,
  tenantId: string,
  id: string,
): Promise<string | null | undefined> {
  const { rows } = await pool.query<{ project_id: string | null }>(
    `SELECT project_id FROM outgoing_emails WHERE tenant_id = $1 AND id = $2
     UNION ALL
     SELECT project_id FROM email_logs WHERE tenant_id = $1 AND id = $2 AND created_at IS NOT NULL
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
  pool: pg.Pool,
  tenantId: string,
  id: string,
  cutoff: Date,
): Promise<{ message: Record<string, unknown>; createdAt: Date } | null> {
  const { rows } = await pool.query<{ message: Record<string, unknown>; created_at: Date }>(
    `SELECT s.message, s.created_at FROM sandbox_messages s
      WHERE s.tenant_id = $1 AND s.email_id = $2
        AND COALESCE(
              (SELECT l.created_at FROM email_logs l WHERE l.tenant_id = $1 AND l.id = $2),
              (SELECT o.created_at FROM outgoing_emails o WHERE o.tenant_id = $1 AND o.id = $2),
              s.created_at) >= $3`,
    [tenantId, id, cutoff],
  );
  const r = rows[0];
  return r ? { message: r.message, createdAt: r.created_at } : null;
}

/**
 * Moves a scheduled email not yet handed to the provider to `at` (SPEC §22: Resend's update):
 * its due time and `scheduledAt` change together; `'moved'`, `'not_found'`, or `'handed'` when it
 * is not (or no longer) a scheduled email waiting for its time.
 */
export async function rescheduleOutgoing(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  at: Date,
  now: Date,
): Promise<'moved' | 'not_found' | 'handed'> {
  const { rows } = await pool.query<{ before: string | null; after: string | null }>(
    `WITH target AS (
       SELECT state FROM outgoing_emails WHERE tenant_id = $1 AND id = $2
     ), changed AS (
       UPDATE outgoing_emails SET due_at = $3, scheduled_at = $3, updated_at = $4
        WHERE tenant_id = $1 AND id = $2 AND state IN ('awaiting_log', 'pending') AND attempts = 0
          AND scheduled_at IS NOT NULL AND due_at > $4
        RETURNING state
     )
     SELECT (SELECT state FROM target) AS before, (SELECT state FROM changed) AS after`,
    [tenantId, id, at, now],
  );
  const r = rows[0];
  if (!r || r.before === null) {
    return (await emailIsVisible(pool, tenantId, id)) ? 'handed' : 'not_found';
  }
  return r.after === null ? 'handed' : 'moved';
}

/** The sent emails repository: the functions above over one pool (`ApiStores.emails`). */
export interface EmailStore {
  cancel: PoolBound<typeof cancelOutgoing>;
  markCancelled: PoolBound<typeof markCancelled>;
  detail: PoolBound<typeof emailDetail>;
  project: PoolBound<typeof emailProject>;
  sandboxContent: PoolBound<typeof sandboxContent>;
  reschedule: PoolBound<typeof rescheduleOutgoing>;
}

export function createEmailStore(pool: pg.Pool): EmailStore {
  return bindPool(pool, {
    cancel: cancelOutgoing,
    markCancelled,
    detail: emailDetail,
    project: emailProject,
    sandboxContent,
    reschedule: rescheduleOutgoing,
  });
}
