import { createHash } from 'node:crypto';
import {
  type DeliveryEvent,
  deliveryEventSchema,
  type EmailCancelled,
  type EmailQueued,
  type EventType,
  isCanonicalDeliveryEvent,
} from '@tern/contracts';
import { cutSubject } from './render.js';

/**
 * The events Tern writes itself, built in one place next to the fold that reads them. Every id is
 * derived from what the event is about (the email, the attempt, the outcome), so writing the same
 * fact twice — a retried request, a restarted job, a redone attempt — gives the same id, and the
 * projector folds it once (SPEC §5: idempotency by `(tenantId, id)`). Only tracking events, each
 * a distinct fact, take a caller-drawn `nonce`.
 */

/** What the log must never hold: an event the contract refuses (the projector would dead-letter it). */
function checked<E extends DeliveryEvent>(event: E): E {
  return isCanonicalDeliveryEvent(event) ? event : (deliveryEventSchema.parse(event) as E);
}

/** Longest `reason` of an outcome (the contract's bound): a provider's message may be longer. */
const MAX_REASON = 2000;
const reason = (text: string) => text.slice(0, MAX_REASON);

export interface QueuedInput {
  tenantId: string;
  emailId: string;
  at: Date;
  toEmail: string;
  subject: string;
  from?: string | undefined;
  templateId?: string | null | undefined;
  tags?: readonly string[] | undefined;
  scheduledAt?: Date | null | undefined;
  projectId?: string | null | undefined;
  /** The campaign of campaign mail (SPEC §26). */
  campaignId?: string | null | undefined;
}

/** The id of a send's `email.queued` (its read-your-writes position, SPEC §25). */
export const queuedEventId = (emailId: string): string => `${emailId}:queued`;

/** `email.queued` of a send (single, batch, campaign or sequence mail): id `<emailId>:queued`. */
export function queuedEvent(input: QueuedInput): EmailQueued {
  return checked({
    id: queuedEventId(input.emailId),
    type: 'email.queued',
    tenantId: input.tenantId,
    emailId: input.emailId,
    occurredAt: input.at.toISOString(),
    data: {
      toEmail: input.toEmail,
      subject: cutSubject(input.subject),
      ...(input.templateId != null ? { templateId: input.templateId } : {}),
      ...(input.tags !== undefined ? { tags: [...input.tags] } : {}),
      ...(input.from !== undefined ? { from: input.from } : {}),
      ...(input.scheduledAt != null ? { scheduledAt: input.scheduledAt.toISOString() } : {}),
      ...(input.projectId != null ? { projectId: input.projectId } : {}),
      ...(input.campaignId != null ? { campaignId: input.campaignId } : {}),
    },
  });
}

/** `email.cancelled` of a cancel (API) or of the sender's sweep: one id per email, so both are one event. */
export function cancelledEvent(tenantId: string, emailId: string, at: Date): EmailCancelled {
  return {
    id: `${emailId}:cancelled`,
    type: 'email.cancelled',
    tenantId,
    emailId,
    occurredAt: at.toISOString(),
    data: {},
  };
}

/** The outcome events of one delivery attempt. */
export interface AttemptEvents {
  sent(data: { provider: string; messageId: string; providerMessageId?: string | undefined }): DeliveryEvent;
  delivered(): DeliveryEvent;
  delayed(data: { reason: string }): DeliveryEvent;
  bounced(data: {
    bounceType: 'hard' | 'soft';
    reason?: string;
    smtpStatus?: string | undefined;
    diagnostic?: string | undefined;
  }): DeliveryEvent;
  complained(data?: { feedbackType?: string }): DeliveryEvent;
  failed(data: { reason: string }): DeliveryEvent;
  suppressed(data: { reason: string }): DeliveryEvent;
}

/**
 * The one recipient of several an outcome is about (SPEC §22): its address (the event's
 * `recipient`) and its place in the message's envelope (`slot`, in the event id: an id never
 * holds an address).
 */
export interface OneRecipient {
  recipient: string;
  slot: number;
}

/** `email.bounced`'s data, a sender's or a feedback's: reason and diagnostic cut as every reason is. */
const bouncedData = (data: Parameters<FeedbackEvents['bounced']>[0]) => ({
  bounceType: data.bounceType,
  ...(data.reason !== undefined ? { reason: reason(data.reason) } : {}),
  ...(data.smtpStatus ? { smtpStatus: data.smtpStatus.slice(0, 32) } : {}),
  ...(data.diagnostic !== undefined ? { diagnostic: reason(data.diagnostic) } : {}),
});

/**
 * The sender's outcomes of attempt `attempt` of an email, at `at`: id `<emailId>:a<attempt>:<kind>`
 * (`…:r<slot>` for the outcome of one recipient of several, `who`)
 * (a redone attempt after a crash appends the same ids), and `occurredAt` spaced by 1 ms in the
 * order they are built, so the timeline keeps the order in which they happened.
 */
export function attemptEvents(
  tenantId: string,
  emailId: string,
  attempt: number,
  at: Date,
  who?: OneRecipient,
): AttemptEvents {
  const base = at.getTime();
  let n = 0;
  const make = <T extends EventType>(type: T, data: Record<string, unknown>): DeliveryEvent =>
    ({
      id: `${emailId}:a${attempt}:${type.slice('email.'.length)}${who ? `:r${who.slot}` : ''}`,
      type,
      tenantId,
      emailId,
      occurredAt: new Date(base + n++).toISOString(),
      data: who ? { ...data, recipient: who.recipient } : data,
    }) as DeliveryEvent;
  return {
    sent: (data) =>
      make('email.sent', {
        provider: data.provider,
        messageId: data.messageId,
        ...(data.providerMessageId ? { providerMessageId: data.providerMessageId.slice(0, 998) } : {}),
      }),
    delivered: () => make('email.delivered', {}),
    delayed: (data) => make('email.delayed', { reason: reason(data.reason) }),
    bounced: (data) => make('email.bounced', bouncedData(data)),
    complained: (data = {}) =>
      make('email.complained', data.feedbackType !== undefined ? { feedbackType: data.feedbackType } : {}),
    failed: (data) => make('email.failed', { reason: reason(data.reason) || 'failed' }),
    suppressed: (data) => make('email.suppressed', { reason: reason(data.reason) }),
  };
}

export interface TrackingInput {
  tenantId: string;
  emailId: string;
  at: Date;
  /** Random: every open and click is a fact of its own. */
  nonce: string;
  userAgent?: string | undefined;
  bot?: boolean | undefined;
  /** An open no person made (SPEC §21); opens only. */
  machine?: boolean | undefined;
}

const agent = (input: TrackingInput) => ({
  ...(input.userAgent ? { userAgent: input.userAgent.slice(0, 1000) } : {}),
  ...(input.bot ? { bot: true } : {}),
});

/** `email.opened` of the open pixel: id `<emailId>:open:<nonce>`. */
export function openedEvent(input: TrackingInput): DeliveryEvent {
  return checked({
    id: `${input.emailId}:open:${input.nonce}`,
    type: 'email.opened',
    tenantId: input.tenantId,
    emailId: input.emailId,
    occurredAt: input.at.toISOString(),
    data: { ...agent(input), ...(input.machine ? { machine: true } : {}) },
  });
}

/** `email.clicked` of a tracked link: id `<emailId>:click:<nonce>`. */
export function clickedEvent(input: TrackingInput & { url: string }): DeliveryEvent {
  return checked({
    id: `${input.emailId}:click:${input.nonce}`,
    type: 'email.clicked',
    tenantId: input.tenantId,
    emailId: input.emailId,
    occurredAt: input.at.toISOString(),
    data: { url: input.url, ...agent(input) },
  });
}

/** What an upstream provider's notification says about one email (SPEC §21). */
export interface ProviderNoticeInput {
  /** `ses`, `sendgrid`, … : the first part of the event's id. */
  provider: string;
  /** The notification's own key (its event id, or its message and recipient): the same notice → the same id. */
  key: string;
  tenantId: string;
  emailId: string;
  type: EventType;
  data: Record<string, unknown>;
  /** The provider's timestamp when it is one (ISO or any `Date.parse` form), else `receivedAt`. */
  occurredAt: string | undefined;
  receivedAt: Date;
  /** The one recipient of several the notice is about (SPEC §22). */
  recipient?: string | undefined;
}

/** A provider notice's event id: `<provider>:<32 base64url chars of the SHA-256 of its key>`. */
export const providerEventId = (provider: string, key: string): string =>
  `${provider}:${createHash('sha256').update(key).digest('base64url').slice(0, 32)}`;

/**
 * The event of an upstream provider's notification (`POST /providers/*`, SPEC §21), or null when
 * the contract refuses what the provider sent (a redelivered notice gets the same id).
 */
export function providerNoticeEvent(input: ProviderNoticeInput): DeliveryEvent | null {
  const ms = input.occurredAt === undefined ? Number.NaN : Date.parse(input.occurredAt);
  const parsed = deliveryEventSchema.safeParse({
    id: providerEventId(input.provider, input.key),
    type: input.type,
    tenantId: input.tenantId,
    emailId: input.emailId,
    occurredAt: (Number.isFinite(ms) ? new Date(ms) : input.receivedAt).toISOString(),
    data: input.recipient !== undefined ? { ...input.data, recipient: input.recipient } : input.data,
  });
  return parsed.success ? (parsed.data as DeliveryEvent) : null;
}

/** The outcomes delivery feedback reports about an email after the hand-off (SPEC §21). */
export interface FeedbackEvents {
  delivered(): DeliveryEvent;
  delayed(data: { reason: string }): DeliveryEvent;
  bounced(data: {
    bounceType: 'hard' | 'soft';
    reason?: string | undefined;
    smtpStatus?: string | undefined;
    diagnostic?: string | undefined;
  }): DeliveryEvent;
  complained(data?: { feedbackType?: string | undefined }): DeliveryEvent;
}

/**
 * Events of one piece of delivery feedback (a DSN's recipient, an ARF report, a provider's
 * notification) about an email: id `<emailId>:fb:<sourceId>:<kind>`, where `sourceId` is derived
 * from the feedback itself (a hash of the report and the recipient, the provider's event id), so
 * the same report delivered twice is one event for the projector. `recipient`: the one recipient
 * of several the feedback is about (SPEC §22; `sourceId` must then differ per recipient).
 */
export function feedbackEvents(
  tenantId: string,
  emailId: string,
  sourceId: string,
  at: Date,
  recipient?: string,
): FeedbackEvents {
  const make = (type: EventType, data: Record<string, unknown>): DeliveryEvent =>
    checked({
      id: `${emailId}:fb:${sourceId}:${type.slice('email.'.length)}`,
      type,
      tenantId,
      emailId,
      occurredAt: at.toISOString(),
      data: recipient !== undefined ? { ...data, recipient } : data,
    } as DeliveryEvent);
  return {
    delivered: () => make('email.delivered', {}),
    delayed: (data) => make('email.delayed', { reason: reason(data.reason) }),
    bounced: (data) => make('email.bounced', bouncedData(data)),
    complained: (data = {}) =>
      make(
        'email.complained',
        data.feedbackType !== undefined ? { feedbackType: data.feedbackType.slice(0, 200) } : {},
      ),
  };
}
/**
 * A message id as Tern matches it (SPEC §21, `provider_messages`): trimmed, without its angle
 * brackets, so `<em_1@host>` of a header and `em_1@host` of a provider's payload are one id.
 */
export const normalizeMessageId = (id: string): string =>
  id
    .trim()
    .replace(/^<(.*)>$/, '$1')
    .trim();
