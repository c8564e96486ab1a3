// The notices of the providers that post their own webhooks (SendGrid, Postmark, Mailgun, Resend);
// SES's come through SNS (notices.ts, sns.ts). Each returns what one request says happened.

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
  unixTime,
} from './notice-fields.js';

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
