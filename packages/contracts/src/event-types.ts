// The names of the event types (SPEC §5, §20), and nothing else: no zod, no other import, so the
// browser bundle of the dashboard and the published SDK's declarations take them from here
// (`@tern/contracts/event-types`, or the types through `@tern/contracts/wire`) instead of keeping
// copies. A new event type is one name here, its schema in `events.ts` (or `domains.ts`) and its
// case in the fold.

/** The delivery events of an email. */
export const EVENT_TYPES = [
  'email.queued',
  'email.sent',
  'email.delayed',
  'email.delivered',
  'email.bounced',
  'email.failed',
  'email.suppressed',
  'email.cancelled',
  'email.opened',
  'email.clicked',
  'email.complained',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The verification outcomes of a sending domain. */
export const DOMAIN_EVENT_TYPES = ['domain.verified', 'domain.failed'] as const;
export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

/** An inbound message's arrival (SPEC §24). */
export const INBOUND_EVENT_TYPE = 'email.received';

/** What a webhook endpoint can subscribe to: all three. */
export const WEBHOOK_EVENT_TYPES = [...EVENT_TYPES, ...DOMAIN_EVENT_TYPES, INBOUND_EVENT_TYPE] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
