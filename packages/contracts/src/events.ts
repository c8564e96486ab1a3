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

/**
 * `email.queued` as consumers read it. `toEmail` and `subject` are personal data: in the event log
 * they travel sealed (`emailQueuedSealedData`); a consumer gets them opened, or `null` once the
 * recipient was erased or the month's key expired (SPEC §14, crypto-shredding). Ingest refuses
 * `null` (`validateEvents`): only erasure makes them null.
 */
export const emailQueuedData = z.strictObject({
  toEmail: z.email({ error: 'toEmail must be an email address' }).max(320).nullable(),
  subject: z.string({ error: 'subject must be a string' }).max(998).nullable(),
  templateId: idSchema('templateId').optional(),
  tags: z.array(nonEmpty('tag', 256)).max(50, { error: 'tags must have at most 50 items' }).optional(),
  from: z.string().max(320).optional(),
  scheduledAt: isoTimestamp('scheduledAt').optional(),
  /** The email's project (SPEC §16); logs and analytics can be narrowed to it. */
  projectId: idSchema('projectId').optional(),
});
/** Personal fields sealed with AES-256-GCM under the (tenant, recipient hash `rh`, UTC month `p`) data key. */
export const sealedFieldsSchema = z.strictObject({
  v: z.literal(1),
  rh: z.string().min(1).max(64),
  p: z.string().regex(/^\d{4}-\d{2}$/),
  iv: z.string().max(32),
  ct: z.string().max(16_000),
  tag: z.string().max(32),
});
/** `email.queued` data as the event log holds it: `toEmail` and `subject` only inside `sealed`. */
export const emailQueuedSealedData = emailQueuedData.omit({ toEmail: true, subject: true }).extend({
  sealed: sealedFieldsSchema,
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
/** `bot: true` — a known link scanner or prefetcher (SPEC §11): kept on the timeline, never counted. */
export const emailOpenedData = z.strictObject({
  userAgent: z.string().max(1000).optional(),
  bot: z.boolean().optional(),
});
export const emailClickedData = z.strictObject({
  url: nonEmpty('url', 4000),
  userAgent: z.string().max(1000).optional(),
  bot: z.boolean().optional(),
});
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

/**
 * The range of `occurredAt` every store can hold: from 1970-01-01 (ClickHouse `Date` and
 * `DateTime` start there) to before 2149-06-06 (the end of ClickHouse `Date`), and never more
 * than a day ahead of the receiving clock (a clock that far off is a bug, not a fact).
 */
export const OCCURRED_AT_MIN_MS = Date.UTC(1970, 0, 1);
export const OCCURRED_AT_MAX_MS = Date.UTC(2149, 5, 6);
export const MAX_FUTURE_SKEW_MS = 24 * 3600 * 1000;

/**
 * Why no store could hold a string, or null: U+0000 (Postgres text and jsonb refuse it) and a
 * lone UTF-16 surrogate (not valid Unicode: Postgres jsonb refuses it, UTF-8 cannot encode it).
 */
/** A UTF-16 surrogate without its partner (matched without the `u` flag, code unit by code unit). */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function unstorableText(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the control character U+0000';
  if (LONE_SURROGATE.test(value)) return 'must not contain a lone UTF-16 surrogate (invalid Unicode)';
  return null;
}

/** Every string of a parsed value with its path (keys included: a key is stored too). */
function* strings(value: unknown, path: (string | number)[] = []): Generator<[string, (string | number)[]]> {
  if (typeof value === 'string') yield [value, path];
  else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* strings(v, [...path, i]);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      yield [k, [...path, k]];
      yield* strings(v, [...path, k]);
    }
  }
}

/** Refuses what parses but no store can hold (issue 9, item 1): a poison event is stopped at ingest. */
function checkStorable(event: { occurredAt: string }, ctx: z.RefinementCtx, now = Date.now()): void {
  for (const [text, path] of strings(event)) {
    const problem = unstorableText(text);
    if (problem)
      ctx.addIssue({ code: 'custom', path, message: `${String(path.at(-1) ?? 'value')} ${problem}` });
  }
  // A malformed timestamp already has its own issue.
  if (!isoTimestamp('occurredAt').safeParse(event.occurredAt).success) return;
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
