import { z } from 'zod';
import {
  emailBouncedData,
  emailClickedData,
  emailComplainedData,
  emailDelayedData,
  emailDeliveredData,
  emailFailedData,
  emailOpenedData,
  emailQueuedData,
  emailSentData,
  emailSuppressedData,
  emptyData,
} from './event-data.js';
import { isoTimestamp } from './event-fields.js';
import { EVENT_TYPES } from './event-types.js';
import { idSchema } from './ids.js';
import { MAX_FUTURE_SKEW_MS, OCCURRED_AT_MAX_MS, OCCURRED_AT_MIN_MS, unstorableText } from './storable.js';

/**
 * Delivery events (SPEC §5). One definition, used by ingest (validation), the event log
 * (serialisation) and the projector (parsing). Types are past tense, as facts.
 *
 * This module: the events and their union. Beside it: `event-data.ts` (each type's `data`),
 * `storable.ts` (what every store can hold), `canonical-events.ts` (the cheap check of a canonical
 * event), `validate-events.ts` (ingest's validation), `personal-fields.ts` (what erasure scrubs).
 */

const envelope = {
  id: idSchema('id'),
  tenantId: idSchema('tenantId'),
  emailId: idSchema('emailId'),
  occurredAt: isoTimestamp('occurredAt'),
};

const event = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.strictObject({ ...envelope, type: z.literal(type), data });

export { EVENT_TYPES, type EventType } from './event-types.js';

export const emailQueued = event('email.queued', emailQueuedData);
export const emailSent = event('email.sent', emailSentData);
export const emailDelayed = event('email.delayed', emailDelayedData.optional().default({}));
export const emailDelivered = event('email.delivered', emailDeliveredData.optional().default({}));
export const emailBounced = event('email.bounced', emailBouncedData);
export const emailFailed = event('email.failed', emailFailedData);
export const emailSuppressed = event('email.suppressed', emailSuppressedData);
export const emailCancelled = event('email.cancelled', emptyData);
export const emailOpened = event('email.opened', emailOpenedData.optional().default({}));
export const emailClicked = event('email.clicked', emailClickedData);
export const emailComplained = event('email.complained', emailComplainedData.optional().default({}));

/**
 * Calls `found` for every string of a parsed event that no store can hold, with its path. It runs
 * on what the schema accepted, whose objects are all strict: their keys are the schema's own names,
 * so only values are checked. One path stack, copied only when a string is refused.
 */
function unstorableStrings(
  value: unknown,
  found: (problem: string, path: string[]) => void,
  path: string[] = [],
): void {
  if (typeof value === 'string') {
    const problem = unstorableText(value);
    if (problem) found(problem, [...path]);
    return;
  }
  // An object's fields, an array's items (keyed by index); a number, a boolean or null has none.
  for (const [key, item] of Object.entries(value ?? {})) {
    path.push(key);
    unstorableStrings(item, found, path);
    path.pop();
  }
}

const occurredAtSchema = isoTimestamp('occurredAt');

/** Refuses what parses but no store can hold (issue 9, item 1): a poison event is stopped at ingest. */
function checkStorable(event: { occurredAt: string }, ctx: z.RefinementCtx, now = Date.now()): void {
  unstorableStrings(event, (problem, path) =>
    ctx.addIssue({ code: 'custom', path, message: `${path.at(-1)} ${problem}` }),
  );
  // A malformed timestamp already has its own issue.
  if (!occurredAtSchema.safeParse(event.occurredAt).success) return;
  const at = Date.parse(event.occurredAt);
  if (!(at >= OCCURRED_AT_MIN_MS && at < OCCURRED_AT_MAX_MS)) {
    ctx.addIssue({
      code: 'custom',
      path: ['occurredAt'],
      message: 'occurredAt must be between 1970-01-01 and 2149-06-05 (UTC)',
    });
  } else if (at > now + MAX_FUTURE_SKEW_MS) {
    ctx.addIssue({
      code: 'custom',
      path: ['occurredAt'],
      message: 'occurredAt must not be more than 1 day in the future',
    });
  }
}

/** Any delivery event; discriminated on `type` so an unknown type gets one precise error. */
export const deliveryEventSchema = z
  .discriminatedUnion(
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
  )
  .superRefine((event, ctx) => checkStorable(event, ctx));

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
