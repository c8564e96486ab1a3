import { type DeliveryEvent, type EmailDetail, envelopeOf, recipientsOf } from '@tern/contracts';
import { type EmailState, queuedStatus, recipientOutcomes } from '@tern/domain';
import { bindPool, type Repository } from '@tern/kernel';
import { emailIsVisible, timelineOf } from '@tern/read-models';
import type pg from 'pg';
import { cancelSend, markSendCancelled, rescheduleSend } from './send-controls.js';
import { emailDetailRow, emailProject, sandboxContent } from './send-detail.js';

/**
 * The sent emails' reads and controls (SPEC §11) as the api's routes need them, over this
 * package's statements (`cancelSend`, `rescheduleSend`, `emailDetailRow`, …): the fallbacks to the
 * log and the rows turned into responses. No HTTP here.
 */

type TimelineEvent = EmailDetail['events'][number];

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
  const outcome = await cancelSend(pool, tenantId, id, at);
  if (outcome !== 'no_send') return outcome;
  // An email Tern did not send itself (posted to POST /events) cannot be cancelled here.
  return (await emailIsVisible(pool, tenantId, id)) ? 'handed' : 'not_found';
}

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
  const row = await emailDetailRow(pool, tenantId, id);
  if (!row || row.id === null) return null;
  const state = row.created_at !== null ? (row.state as EmailState) : null;
  const m = row.o_message ?? {};
  if (state === null || state.queued === null) {
    if (row.o_created_at === null || row.o_created_at < cutoff) return null;
    const scheduled = row.o_scheduled_at;
    // The fold's own rule (packages/domain), so a send not yet projected shows what the log will.
    const status = queuedStatus({
      createdAt: row.o_created_at.toISOString(),
      scheduledAt: scheduled?.toISOString() ?? null,
    });
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
      opened: false,
      clicked: false,
      complained: false,
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
    opened: state.openCount > 0,
    clicked: state.clickCount > 0,
    complained: state.complaintCount > 0,
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
      (e): TimelineEvent => ({
        type: e.type as TimelineEvent['type'],
        occurredAt: e.occurred_at.toISOString(),
        data: e.data,
      }),
    ),
  };
}

/**
 * Moves a scheduled email not yet handed to the provider to `at` (SPEC §22: Resend's update);
 * `'moved'`, `'not_found'`, or `'handed'` when it is not (or no longer) a scheduled email waiting
 * for its time.
 */
export async function rescheduleOutgoing(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  at: Date,
  now: Date,
): Promise<'moved' | 'not_found' | 'handed'> {
  const outcome = await rescheduleSend(pool, tenantId, id, at, now);
  if (outcome !== 'no_send') return outcome;
  return (await emailIsVisible(pool, tenantId, id)) ? 'handed' : 'not_found';
}

const emailStatements = {
  cancel: cancelOutgoing,
  markCancelled: markSendCancelled,
  detail: emailDetail,
  project: emailProject,
  sandboxContent,
  reschedule: rescheduleOutgoing,
};

/** The sent emails repository: the functions above and packages/sending's over one pool (the api's `/emails/:id*` routes). */
export type EmailStore = Repository<typeof emailStatements>;

export function createEmailStore(pool: pg.Pool): EmailStore {
  return bindPool(pool, emailStatements);
}
