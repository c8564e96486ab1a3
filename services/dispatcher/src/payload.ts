import type {
  DeliveryEvent,
  DomainEvent,
  DomainWebhookPayload,
  InboundEvent,
  WebhookPayload,
} from '@tern/contracts';
import { type EmailView, webhookPayload } from '@tern/read-models';

/**
 * The body of a delivery (SPEC §17), read as the event stream reads it (`webhookPayload`). The
 * email's part is the email log's view of it as of this event (packages/read-models
 * `emailViewsAt`), so the status is right even when the projector has not applied the event yet.
 */
export function buildPayload(event: DeliveryEvent, view: EmailView): WebhookPayload {
  return webhookPayload(event, view);
}

/** The body of a domain event's delivery (SPEC §20): the domain as its check found it. */
export function buildDomainPayload(event: DomainEvent): DomainWebhookPayload {
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: { domainId: event.domainId, tenantId: event.tenantId, ...event.data },
  };
}

/**
 * The body of an `email.received` delivery (SPEC §24): the message's metadata and the links of its
 * content on the api (`/inbound/:id`, `/raw`), never the body itself.
 */
export function buildInboundPayload(event: InboundEvent) {
  const id = event.inboundId;
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: {
      inboundId: id,
      tenantId: event.tenantId,
      ...event.data,
      links: { self: `/inbound/${id}`, raw: `/inbound/${id}/raw` },
    },
  };
}
