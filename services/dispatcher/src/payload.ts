import type {
  DeliveryEvent,
  DomainEvent,
  DomainWebhookPayload,
  InboundEvent,
  WebhookPayload,
} from '@tern/contracts';
import { domainPayload, type EmailView, inboundPayload, webhookPayload } from '@tern/read-models';

/**
 * The body of a delivery (SPEC §17), read as the event stream reads it (`webhookPayload`). The
 * email's part is the email log's view of it as of this event (packages/read-models
 * `emailViewsAt`), so the status is right even when the projector has not applied the event yet.
 */
export function buildPayload(event: DeliveryEvent, view: EmailView): WebhookPayload {
  return webhookPayload(event, view);
}

/** The body of a domain event's delivery (SPEC §20): as the event stream reads it. */
export const buildDomainPayload = (event: DomainEvent): DomainWebhookPayload => domainPayload(event);

/** The body of an `email.received` delivery (SPEC §24): as the event stream reads it. */
export const buildInboundPayload = (event: InboundEvent) => inboundPayload(event);
