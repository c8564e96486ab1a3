import type { DeliveryEvent, DomainEvent, DomainWebhookPayload, WebhookPayload } from '@tern/contracts';
import type { EmailView } from '@tern/read-models';

/**
 * The body of a delivery (SPEC §17): `{ type, timestamp, data }`, `data` = the email's id,
 * tenant, project, recipient, subject, tags and status, plus the event's own fields. The email's part
 * is the email log's view of it as of this event (packages/read-models `emailViewsAt`), so the
 * status is right even when the projector has not applied the event yet.
 */
export function buildPayload(event: DeliveryEvent, view: EmailView): WebhookPayload {
  const own = (event.data ?? {}) as Record<string, unknown>;
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: {
      ...own,
      emailId: event.emailId,
      tenantId: event.tenantId,
      projectId: view.projectId,
      to: view.to,
      subject: view.subject,
      tags: view.tags,
      status: view.status,
    },
  };
}

/** The body of a domain event's delivery (SPEC §20): the domain as its check found it. */
export function buildDomainPayload(event: DomainEvent): DomainWebhookPayload {
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: { domainId: event.domainId, tenantId: event.tenantId, ...event.data },
  };
}
