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
  unixTime,
} from './notice-fields.js';

/**
 * What one provider notification says happened to one message, before Tern knows which email it
 * is (SPEC §21). `key` is the provider's own id of the event (SNS MessageId, sg_event_id, Mailgun
 * event id, the Standard Webhooks `webhook-id`; Postmark sends none, so its record's identity is
 * used): the Tern event id derives from it, so a redelivered notification is a duplicate.
 */
export interface Notice {
  key: string;
  /** Ids the provider names the message by; any of them may be the one `email.sent` recorded. */
  messageIds: string[];
  /** The provider's time of the event; undefined → the time it was received. */
  occurredAt: string | undefined;
  outcome: Outcome;
  /**
   * The one recipient of several the outcome is about (SPEC §22): set when the notification names
   * several recipients of the message, one notice each; the event then names it.
   */
  recipient?: string;
}

export type Outcome =
  | { type: 'email.delivered'; data: Record<string, never> }
  | { type: 'email.delayed'; data: { reason?: string } }
  | {
      type: 'email.bounced';
      data: { bounceType: 'hard' | 'soft'; reason?: string; smtpStatus?: string; diagnostic?: string };
    }
  | { type: 'email.complained'; data: { feedbackType?: string } }
  | { type: 'email.failed'; data: { reason: string } }
  | { type: 'email.opened'; data: { userAgent?: string; machine?: boolean } }
  | { type: 'email.clicked'; data: { url: string; userAgent?: string } };

export type ProviderName = 'ses' | 'sendgrid' | 'postmark' | 'mailgun' | 'resend';

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

/** SendGrid Event Webhook: a JSON array of events. */
export function sendgridNotices(body: unknown): Notice[] {
  const out: Notice[] = [];
  for (const raw of arr(body)) {
    const e = obj(raw);
    const key = str(e.sg_event_id);
    if (key === undefined) continue;
    const sgId = str(e.sg_message_id);
    // sg_message_id = the X-Message-Id SendGrid answered at submission + ".filter…".
    const messageIds = ids(sgId, sgId?.split('.')[0], e['smtp-id']);
    const reason = clip(str(e.reason) ?? str(e.response), 2000);
    let outcome: Outcome | null = null;
    switch (str(e.event)) {
      case 'delivered':
        outcome = { type: 'email.delivered', data: {} };
        break;
      case 'deferred':
        outcome = { type: 'email.delayed', data: defined({ reason }) };
        break;
      case 'bounce': {
        // `type: blocked` (or classification) is a temporary refusal; `bounce` a permanent one.
        const soft = str(e.type) === 'blocked';
        outcome = {
          type: 'email.bounced',
          data: defined({
            bounceType: soft ? 'soft' : 'hard',
            reason,
            smtpStatus: clip(str(e.status) ?? enhancedStatus(reason), 32),
            diagnostic: reason,
          }),
        };
        break;
      }
      case 'dropped':
        outcome = {
          type: 'email.failed',
          data: { reason: `dropped by SendGrid: ${reason ?? 'unknown'}`.slice(0, 2000) },
        };
        break;
      case 'spamreport':
        outcome = { type: 'email.complained', data: { feedbackType: 'abuse' } };
        break;
      case 'open':
        outcome = openOutcome(str(e.useragent), str(e.ip), e.sg_machine_open === true);
        break;
      case 'click':
        outcome = clickOutcome(str(e.url), str(e.useragent));
        break;
      default:
        break;
    }
    if (outcome) out.push({ key, messageIds, occurredAt: unixTime(e.timestamp), outcome });
  }
  return out;
}

/** Postmark webhooks: one record a request, `RecordType` says which. */
export function postmarkNotices(body: unknown): Notice[] {
  const r = obj(body);
  const recordType = str(r.RecordType);
  const messageIds = ids(r.MessageID);
  if (recordType === undefined || messageIds.length === 0) return [];
  const at = str(r.BouncedAt) ?? str(r.DeliveredAt) ?? str(r.ReceivedAt) ?? str(r.ChangedAt);
  // No event id in Postmark's payloads: the record's own identity. Bounces and complaints carry an
  // ID; a message is delivered once per recipient; opens and clicks differ by their time.
  const id = typeof r.ID === 'number' || typeof r.ID === 'string' ? String(r.ID) : undefined;
  const key =
    (recordType === 'Bounce' || recordType === 'SpamComplaint') && id !== undefined
      ? `${recordType}:${id}`
      : recordType === 'Delivery'
        ? `${recordType}:${messageIds[0]}:${str(r.Recipient) ?? ''}`
        : `${recordType}:${messageIds[0]}:${str(r.Recipient) ?? ''}:${at ?? ''}:${str(r.OriginalLink) ?? ''}:${id ?? ''}`;
  let outcome: Outcome | null = null;
  switch (recordType) {
    case 'Delivery':
      outcome = { type: 'email.delivered', data: {} };
      break;
    case 'Bounce': {
      const type = str(r.Type) ?? '';
      const details = clip(str(r.Details) ?? str(r.Description), 2000);
      const soft = [
        'SoftBounce',
        'Transient',
        'DnsError',
        'AutoResponder',
        'OpenRelayTest',
        'Unknown',
        'Blocked',
      ].includes(type);
      outcome = {
        type: 'email.bounced',
        data: defined({
          bounceType: soft ? 'soft' : 'hard',
          reason: clip(type || undefined, 2000),
          smtpStatus: clip(enhancedStatus(details), 32),
          diagnostic: details,
        }),
      };
      break;
    }
    case 'SpamComplaint':
      outcome = { type: 'email.complained', data: { feedbackType: 'abuse' } };
      break;
    case 'Open':
      outcome = openOutcome(str(r.UserAgent), str(obj(r.Geo).IP));
      break;
    case 'Click':
      outcome = clickOutcome(str(r.OriginalLink), str(r.UserAgent));
      break;
    default:
      break;
  }
  return outcome ? [{ key, messageIds, occurredAt: at, outcome }] : [];
}

/** Mailgun webhooks: `{ signature, "event-data" }`, one event a request. */
export function mailgunNotices(body: unknown): Notice[] {
  const d = obj(obj(body)['event-data']);
  const key = str(d.id);
  if (key === undefined) return [];
  const message = obj(d.message);
  const messageIds = ids(obj(message.headers)['message-id'], d['message-id']);
  const status = obj(d['delivery-status']);
  const description = clip(str(status.description) || str(status.message) || str(d.reason), 2000);
  const code = typeof status.code === 'number' ? status.code : undefined;
  let outcome: Outcome | null = null;
  switch (str(d.event)) {
    case 'delivered':
      outcome = { type: 'email.delivered', data: {} };
      break;
    case 'failed':
      if (str(d.severity) === 'temporary')
        outcome = { type: 'email.delayed', data: defined({ reason: description }) };
      else
        outcome = {
          type: 'email.bounced',
          data: defined({
            bounceType: 'hard',
            reason: clip(str(d.reason), 2000),
            smtpStatus: clip(enhancedStatus(description) ?? (code ? String(code) : undefined), 32),
            diagnostic: description,
          }),
        };
      break;
    case 'complained':
      outcome = { type: 'email.complained', data: { feedbackType: 'abuse' } };
      break;
    case 'opened':
      outcome = openOutcome(str(obj(d['client-info'])['user-agent']), str(d.ip));
      break;
    case 'clicked':
      outcome = clickOutcome(str(d.url), str(obj(d['client-info'])['user-agent']));
      break;
    default:
      break;
  }
  return outcome ? [{ key, messageIds, occurredAt: unixTime(d.timestamp), outcome }] : [];
}

/** Resend webhooks (Standard Webhooks): `{ type, created_at, data }`; the key is the `webhook-id`. */
export function resendNotices(webhookId: string, body: unknown): Notice[] {
  const b = obj(body);
  const data = obj(b.data);
  const headers = arr(data.headers).map(obj);
  const headerId = headers.find((h) => str(h.name)?.toLowerCase() === 'message-id')?.value;
  const messageIds = ids(data.email_id, headerId);
  const at = str(b.created_at);
  let outcome: Outcome | null = null;
  switch (str(b.type)) {
    case 'email.delivered':
      outcome = { type: 'email.delivered', data: {} };
      break;
    case 'email.delivery_delayed':
      outcome = { type: 'email.delayed', data: {} };
      break;
    case 'email.bounced': {
      const bounce = obj(data.bounce);
      const message = clip(str(bounce.message), 2000);
      outcome = {
        type: 'email.bounced',
        data: defined({
          bounceType: str(bounce.type) === 'Transient' ? 'soft' : 'hard',
          reason: clip([str(bounce.type), str(bounce.subType)].filter(Boolean).join(': ') || undefined, 2000),
          smtpStatus: clip(enhancedStatus(message), 32),
          diagnostic: message,
        }),
      };
      break;
    }
    case 'email.complained':
      outcome = { type: 'email.complained', data: { feedbackType: 'abuse' } };
      break;
    case 'email.failed':
      outcome = {
        type: 'email.failed',
        data: { reason: clip(str(obj(data.failed).reason) ?? 'failed', 2000)! },
      };
      break;
    case 'email.opened': {
      const open = obj(data.open);
      outcome = openOutcome(str(open.userAgent), str(open.ipAddress));
      break;
    }
    case 'email.clicked': {
      const click = obj(data.click);
      outcome = clickOutcome(str(click.link), str(click.userAgent));
      break;
    }
    default:
      break;
  }
  return outcome ? [{ key: webhookId, messageIds, occurredAt: at, outcome }] : [];
}
