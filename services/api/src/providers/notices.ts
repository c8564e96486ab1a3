import type { Notice, Outcome } from './notice.js';
import {
  arr,
  clickOutcome,
  clip,
  defined,
  enhancedStatus,
  ids,
  obj,
  openOutcome,
  str,
} from './notice-fields.js';

/**
 * One notice per recipient a notification lists (SPEC §22: each recipient its own outcome), keyed
 * by the notification and the recipient's place in it; a recipient without an address is skipped.
 */
function perRecipient(
  key: string,
  messageIds: string[],
  occurredAt: string | undefined,
  recipients: Record<string, unknown>[],
  outcomeOf: (r: Record<string, unknown>) => Outcome,
): Notice[] {
  return recipients.flatMap((r, i) => {
    const recipient = addressIn(str(r.emailAddress));
    return recipient === undefined
      ? []
      : [{ key: `${key}:r${i}`, messageIds, occurredAt, outcome: outcomeOf(r), recipient }];
  });
}

/** The bare address of `Name <address>` or `address`, lowercased. */
const addressIn = (v: string | undefined): string | undefined => {
  if (v === undefined) return undefined;
  const a = (/<([^>]+)>/.exec(v)?.[1] ?? v).trim().toLowerCase();
  return a === '' ? undefined : a;
};

/**
 * SES event of an SNS Notification's `Message` (both the identity notifications, `notificationType`,
 * and configuration-set event publishing, `eventType`). One notice per event; a bounce or complaint
 * listing several recipients is one notice per recipient, each naming it (SPEC §22).
 */
export function sesNotices(snsMessageId: string, message: unknown): Notice[] {
  const m = obj(message);
  const type = str(m.eventType) ?? str(m.notificationType);
  const mail = obj(m.mail);
  const headers = arr(mail.headers).map(obj);
  const headerId = headers.find((h) => str(h.name)?.toLowerCase() === 'message-id')?.value;
  const messageIds = ids(mail.messageId, obj(mail.commonHeaders).messageId, headerId);
  const notice = (outcome: Outcome | null, at: unknown): Notice[] =>
    outcome === null ? [] : [{ key: snsMessageId, messageIds, occurredAt: str(at), outcome }];
  switch (type) {
    case 'Bounce': {
      const b = obj(m.bounce);
      const hard = str(b.bounceType) === 'Permanent';
      const bounced = arr(b.bouncedRecipients).map(obj);
      const outcomeOf = (r: Record<string, unknown>): Outcome => {
        const diagnostic = clip(str(r.diagnosticCode), 2000);
        const smtpStatus = str(r.status) ?? enhancedStatus(diagnostic);
        return {
          type: 'email.bounced',
          data: defined({
            bounceType: hard ? 'hard' : 'soft',
            reason: clip([str(b.bounceType), str(b.bounceSubType)].filter(Boolean).join(': '), 2000),
            smtpStatus: clip(smtpStatus, 32),
            diagnostic,
          }),
        };
      };
      return bounced.length > 1
        ? perRecipient(snsMessageId, messageIds, str(b.timestamp), bounced, outcomeOf)
        : notice(outcomeOf(bounced[0] ?? {}), b.timestamp);
    }
    case 'Complaint': {
      const c = obj(m.complaint);
      const outcome: Outcome = {
        type: 'email.complained',
        data: defined({ feedbackType: clip(str(c.complaintFeedbackType), 200) }),
      };
      const complained = arr(c.complainedRecipients).map(obj);
      return complained.length > 1
        ? perRecipient(snsMessageId, messageIds, str(c.timestamp), complained, () => outcome)
        : notice(outcome, c.timestamp);
    }
    case 'Delivery':
      return notice({ type: 'email.delivered', data: {} }, obj(m.delivery).timestamp);
    case 'DeliveryDelay': {
      const d = obj(m.deliveryDelay);
      const first = obj(arr(d.delayedRecipients)[0]);
      const reason = [str(d.delayType), str(first.diagnosticCode)].filter(Boolean).join(': ');
      return notice(
        { type: 'email.delayed', data: defined({ reason: clip(reason || undefined, 2000) }) },
        d.timestamp,
      );
    }
    case 'Open': {
      const o = obj(m.open);
      return notice(openOutcome(str(o.userAgent), str(o.ipAddress)), o.timestamp);
    }
    case 'Click': {
      const c = obj(m.click);
      return notice(clickOutcome(str(c.link), str(c.userAgent)), c.timestamp);
    }
    case 'Reject': {
      const r = obj(m.reject);
      return notice(
        {
          type: 'email.failed',
          data: { reason: clip(`rejected by SES: ${str(r.reason) ?? 'unknown'}`, 2000)! },
        },
        mail.timestamp,
      );
    }
    default:
      // Send, Rendering Failure, Subscription: nothing Tern's log tracks.
      return [];
  }
}
