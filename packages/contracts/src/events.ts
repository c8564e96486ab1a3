import { z } from 'zod';
import { idSchema } from './ids.js';

/**
 * Delivery events (SPEC §5). One definition, used by ingest (validation), the event log
 * (serialisation) and the projector (parsing). Types are past tense, as facts.
 */

const isoTimestamp = (what: string) =>
  z.iso.datetime({ offset: true, error: `${what} must be an ISO 8601 timestamp` });

const nonEmpty = (what: string, max = 1000) =>
  z
    .string({ error: `${what} must be a string` })
    .min(1, { error: `${what} must not be empty` })
    .max(max, { error: `${what} must be at most ${max} characters` });

export const emailQueuedData = z.strictObject({
  toEmail: z.email({ error: 'toEmail must be an email address' }).max(320),
  subject: z.string({ error: 'subject must be a string' }).max(998),
  templateId: idSchema('templateId').optional(),
  tags: z.array(nonEmpty('tag', 256)).max(50, { error: 'tags must have at most 50 items' }).optional(),
  from: z.string().max(320).optional(),
  scheduledAt: isoTimestamp('scheduledAt').optional(),
  /** The email's project (SPEC §16); logs and analytics can be narrowed to it. */
  projectId: idSchema('projectId').optional(),
});
export const emailSentData = z.strictObject({
  provider: nonEmpty('provider', 128),
  messageId: nonEmpty('messageId', 998),
});
export const emailDelayedData = z.strictObject({ reason: z.string().max(2000).optional() });
export const emptyData = z.strictObject({}).optional().default({});
export const emailBouncedData = z.strictObject({
  bounceType: z.enum(['hard', 'soft'], { error: 'bounceType must be hard or soft' }),
  reason: z.string().max(2000).optional(),
});
export const emailFailedData = z.strictObject({ reason: nonEmpty('reason', 2000) });
export const emailSuppressedData = z.strictObject({ reason: nonEmpty('reason', 2000) });
export const emailOpenedData = z.strictObject({ userAgent: z.string().max(1000).optional() });
export const emailClickedData = z.strictObject({ url: nonEmpty('url', 4000) });
export const emailComplainedData = z.strictObject({ feedbackType: z.string().max(200).optional() });

const envelope = {
  id: idSchema('id'),
  tenantId: idSchema('tenantId'),
  emailId: idSchema('emailId'),
  occurredAt: isoTimestamp('occurredAt'),
};

const event = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.strictObject({ ...envelope, type: z.literal(type), data });

export const emailQueued = event('email.queued', emailQueuedData);
export const emailSent = event('email.sent', emailSentData);
export const emailDelayed = event('email.delayed', emailDelayedData.optional().default({}));
export const emailDelivered = event('email.delivered', emptyData);
export const emailBounced = event('email.bounced', emailBouncedData);
export const emailFailed = event('email.failed', emailFailedData);
export const emailSuppressed = event('email.suppressed', emailSuppressedData);
export const emailCancelled = event('email.cancelled', emptyData);
export const emailOpened = event('email.opened', emailOpenedData.optional().default({}));
export const emailClicked = event('email.clicked', emailClickedData);
export const emailComplained = event('email.complained', emailComplainedData.optional().default({}));

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

/** Any delivery event; discriminated on `type` so an unknown type gets one precise error. */
export const deliveryEventSchema = z.discriminatedUnion(
  'type',
  [
    emailQueued,
    emailSent,
    emailDelayed,
    emailDelivered,
    emailBounced,
    emailFailed,
    emailSuppressed,
    emailCancelled,
    emailOpened,
    emailClicked,
    emailComplained,
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union' ? `type must be one of ${EVENT_TYPES.join(', ')}` : undefined,
  },
);

export type DeliveryEvent = z.infer<typeof deliveryEventSchema>;
export type EmailQueued = z.infer<typeof emailQueued>;
export type EmailSent = z.infer<typeof emailSent>;
export type EmailDelayed = z.infer<typeof emailDelayed>;
export type EmailDelivered = z.infer<typeof emailDelivered>;
export type EmailBounced = z.infer<typeof emailBounced>;
export type EmailFailed = z.infer<typeof emailFailed>;
export type EmailSuppressed = z.infer<typeof emailSuppressed>;
export type EmailCancelled = z.infer<typeof emailCancelled>;
export type EmailOpened = z.infer<typeof emailOpened>;
export type EmailClicked = z.infer<typeof emailClicked>;
export type EmailComplained = z.infer<typeof emailComplained>;

export const MAX_EVENTS_PER_REQUEST = 1000;

/** `POST /events` body: one event, or `{ events: [...] }` with 1..1000 events. */
export const ingestBatchSchema = z.strictObject({
  events: z
    .array(z.unknown())
    .min(1, { error: 'events must contain at least 1 event' })
    .max(MAX_EVENTS_PER_REQUEST, { error: `events must contain at most ${MAX_EVENTS_PER_REQUEST} events` }),
});

export interface EventIssue {
  index: number;
  path: string;
  message: string;
}

/** Validate a list of raw events; returns the parsed events or every issue with its index. */
export function validateEvents(
  raw: readonly unknown[],
): { ok: true; events: DeliveryEvent[] } | { ok: false; issues: EventIssue[] } {
  const events: DeliveryEvent[] = [];
  const issues: EventIssue[] = [];
  raw.forEach((item, index) => {
    const r = deliveryEventSchema.safeParse(item);
    if (r.success) events.push(r.data);
    else
      for (const i of r.error.issues)
        for (const issue of describeIssue(item, i)) issues.push({ index, ...issue });
  });
  return issues.length === 0 ? { ok: true, events } : { ok: false, issues };
}

/**
 * Zod's issue as the sender should read it (SPEC §4: the message names the field): an absent
 * field says "<field> is required" rather than what type it should have had, and each unknown
 * field gets its own issue whose path points at it.
 */
function describeIssue(item: unknown, issue: z.core.$ZodIssue): Omit<EventIssue, 'index'>[] {
  const path = issue.path.map(String);
  const field = path.at(-1);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      path: [...path, key].join('.'),
      message: `${key} is not an allowed field`,
    }));
  }
  // An optional field raises no issue when absent, so any issue on an absent field means it is required.
  if (field !== undefined && isAbsent(item, path)) {
    return [{ path: path.join('.'), message: `${field} is required` }];
  }
  if (issue.code === 'invalid_type' && issue.expected === 'object') {
    return [{ path: path.join('.'), message: `${field ?? 'event'} must be an object` }];
  }
  return [{ path: path.join('.'), message: issue.message }];
}

/** True when the value at `path` is missing (or undefined) in the raw input. */
function isAbsent(item: unknown, path: readonly string[]): boolean {
  let value: unknown = item;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return true;
    value = (value as Record<string, unknown>)[key];
  }
  return value === undefined;
}
