import { type DeliveryEvent, deliveryEventSchema, type EventType } from '@tern/contracts';

/** Test events, parsed by the real schema so that every fixture is an event ingest would accept. */

export const TENANT = 'tenant-1';
export const EMAIL = 'email-1';

type Opts = { tenantId?: string; emailId?: string };

export function event(
  type: EventType,
  id: string,
  occurredAt: string,
  data: Record<string, unknown> = {},
  opts: Opts = {},
): DeliveryEvent {
  return deliveryEventSchema.parse({
    id,
    type,
    tenantId: opts.tenantId ?? TENANT,
    emailId: opts.emailId ?? EMAIL,
    occurredAt,
    data,
  });
}

export const queued = (id: string, at: string, data: Record<string, unknown> = {}, opts?: Opts) =>
  event('email.queued', id, at, { toEmail: 'ada@example.com', subject: 'Hello', ...data }, opts);
export const sent = (id: string, at: string, provider = 'ses', messageId = `msg-${id}`, opts?: Opts) =>
  event('email.sent', id, at, { provider, messageId }, opts);
export const delayed = (id: string, at: string) => event('email.delayed', id, at);
export const delivered = (id: string, at: string, opts?: Opts) => event('email.delivered', id, at, {}, opts);
export const bounced = (id: string, at: string) => event('email.bounced', id, at, { bounceType: 'hard' });
export const failed = (id: string, at: string) => event('email.failed', id, at, { reason: 'rejected' });
export const suppressed = (id: string, at: string) => event('email.suppressed', id, at, { reason: 'listed' });
export const cancelled = (id: string, at: string) => event('email.cancelled', id, at);
export const opened = (id: string, at: string) => event('email.opened', id, at);
export const clicked = (id: string, at: string) =>
  event('email.clicked', id, at, { url: 'https://example.com' });
export const complained = (id: string, at: string) => event('email.complained', id, at);
