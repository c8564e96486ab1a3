import { z } from 'zod';
import { isCanonicalDeliveryEvent } from './canonical-events.js';
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
 * This module: the events, their union and ingest's validation. Beside it: `event-data.ts` (each
 * type's `data`), `storable.ts` (what every store can hold), `canonical-events.ts` (the cheap
 * check of a canonical event), `personal-fields.ts` (what erasure scrubs).
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
    // Most senders post events already in canonical form: the cheap check accepts only what zod
    // accepts unchanged (canonical.unit.test.ts), so zod runs only for the rest and names the issues.
    if (isCanonicalDeliveryEvent(item)) {
      events.push(item);
      return;
    }
    const r = deliveryEventSchema.safeParse(item);
    if (r.success) {
      // null recipient/subject mean "erased" (a consumer's view); a sender always knows both.
      if (r.data.type === 'email.queued' && (r.data.data.toEmail === null || r.data.data.subject === null)) {
        for (const field of ['toEmail', 'subject'] as const)
          if (r.data.data[field] === null)
            issues.push({
              index,
              path: `data.${field}`,
              message: field === 'toEmail' ? 'toEmail must be an email address' : 'subject must be a string',
            });
      } else events.push(r.data);
    } else
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
