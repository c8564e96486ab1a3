import type { DeliveryEvent, DomainEvent, DomainWebhookPayload, WebhookPayload } from '@tern/contracts';
import { type EmailState, evolve, initialEmailState } from '@tern/domain';

/**
 * The body of a delivery (SPEC §17): `{ type, timestamp, data }`, `data` = the email's id,
 * tenant, project, recipient, subject, tags and status, plus the event's own fields. The email's part
 * comes from its projected state (`email_logs.state`) folded with this event, so the status is
 * right even when the projector has not applied the event yet.
 */
export function buildPayload(event: DeliveryEvent, projected: EmailState | null): WebhookPayload {
  const state = evolve(projected ?? initialEmailState(event.tenantId, event.emailId), event);
  const own = (event.data ?? {}) as Record<string, unknown>;
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: {
      ...own,
      emailId: event.emailId,
      tenantId: event.tenantId,
      projectId: state.queued?.projectId ?? null,
      to: state.queued?.toEmail ?? null,
      subject: state.queued?.subject ?? null,
      tags: state.queued?.tags ?? [],
      status: state.status,
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
