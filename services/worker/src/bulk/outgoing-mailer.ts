import type { DeliveryEventAppender } from '@tern/event-log';
import { enqueueSends, type NewSend } from '@tern/sending';
import type pg from 'pg';
import type { BulkMail, BulkMailer } from './mail.js';

/** A campaign or sequence mail as a send: stored rendered (no `templateId`), sent as is; the event keeps the template for analytics. */
const asSend = (m: BulkMail, at: Date): NewSend => ({
  id: m.id,
  message: {
    from: m.from,
    to: m.to,
    subject: m.subject,
    ...(m.html !== null ? { html: m.html } : {}),
    ...(m.text !== null ? { text: m.text } : {}),
    tags: m.tags,
    unsubscribe: m.unsubscribe,
  },
  subject: m.subject,
  templateId: m.templateId,
  dueAt: m.dueAt ?? at,
  scheduledAt: null,
  projectId: null,
  campaignId: m.campaignId ?? null,
  bulk: true,
});

/**
 * Campaign and sequence mail on the send path of `POST /emails/send` (SPEC §11 + §15,
 * `enqueueSends` of @tern/sending): `outgoing_emails` first, then `email.queued`; idempotent per
 * email id, so a redone fan-out sends nothing twice.
 */
export function outgoingMailer(pool: Pick<pg.Pool, 'query'>, stream: DeliveryEventAppender): BulkMailer {
  return {
    enqueue: (tenantId, mails, at) =>
      enqueueSends(
        pool,
        stream,
        tenantId,
        mails.map((m) => asSend(m, at)),
        at,
      ),
  };
}
