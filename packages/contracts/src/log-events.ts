import { isCanonicalDeliveryEvent } from './canonical-events.js';
import { DOMAIN_EVENT_TYPES, type DomainEvent, domainEventSchema } from './domains.js';
import { type DeliveryEvent, deliveryEventSchema } from './events.js';
import { type InboundEvent, inboundEventSchema, looksLikeInboundEvent } from './inbound.js';

/**
 * Everything Tern's event log carries: the delivery events of an email (SPEC §5), keyed by the
 * email id, and the verification outcomes of a sending domain (SPEC §20), keyed by the domain id.
 * Webhooks subscribe to both.
 */
export type LogEvent = DeliveryEvent | DomainEvent | InboundEvent;

export { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './event-types.js';

export const isDomainEvent = (event: LogEvent): event is DomainEvent => event.type.startsWith('domain.');

/** An inbound message's `email.received` (SPEC §24). */
export const isInboundEvent = (event: LogEvent): event is InboundEvent => event.type === 'email.received';

/** The record key of an event in the log: its email, its domain or its inbound message (per-key order). */
export const logEventKey = (event: LogEvent): string =>
  isDomainEvent(event) ? event.domainId : isInboundEvent(event) ? event.inboundId : event.emailId;

/** A domain event by its shape (a cheap look before the schema): the projector skips these. */
export function looksLikeDomainEvent(json: unknown): boolean {
  const type = (json as { type?: unknown } | null)?.type;
  return typeof type === 'string' && (DOMAIN_EVENT_TYPES as readonly string[]).includes(type);
}

/** A parsed log record, or null when it is neither kind of event. */
export function parseLogEvent(json: unknown): LogEvent | null {
  if (isCanonicalDeliveryEvent(json)) return json;
  if (looksLikeInboundEvent(json)) {
    const inbound = inboundEventSchema.safeParse(json);
    return inbound.success ? inbound.data : null;
  }
  if (looksLikeDomainEvent(json)) {
    const domain = domainEventSchema.safeParse(json);
    return domain.success ? domain.data : null;
  }
  const delivery = deliveryEventSchema.safeParse(json);
  return delivery.success ? delivery.data : null;
}
