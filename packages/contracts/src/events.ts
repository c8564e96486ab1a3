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

/**
 * The one recipient an outcome is about, when the message had several (SPEC §22): a DSN's
 * Final-Recipient, a provider's bounced recipient, an address suppressed out of the envelope.
 * Absent: the outcome is the whole message's. Personal: sealed under that recipient's own key
 * (`packages/privacy`), so erasing it erases this too; reads `[erased]` then (`ERASED_TEXT`).
 */
const recipientField = z
  .union([z.email().max(320), z.literal('[erased]')], { error: 'recipient must be an email address' })
  .optional();

export const emailSentData = z.strictObject({
  provider: nonEmpty('provider', 128),
  messageId: nonEmpty('messageId', 998),
  /**
   * The relay's own id of the message when it differs from `messageId` (the Message-ID header):
   * SES, Postmark and SendGrid name mail by it in their notifications (SPEC §21).
   */
  providerMessageId: z.string().min(1).max(998).optional(),
});
export const emailDelayedData = z.strictObject({
  reason: z.string().max(2000).optional(),
  recipient: recipientField,
});
export const emptyData = z.strictObject({}).optional().default({});
export const emailDeliveredData = z.strictObject({ recipient: recipientField });
/**
 * `smtpStatus`: the enhanced status code of the bounce (RFC 3463, e.g. `5.1.1`) or the reply code
 * a provider reports; `diagnostic`: the remote server's own words (a DSN's `Diagnostic-Code`,
 * a provider's diagnostic), kept apart from Tern's `reason` (SPEC §21).
 */
export const emailBouncedData = z.strictObject({
  bounceType: z.enum(['hard', 'soft'], { error: 'bounceType must be hard or soft' }),
  reason: z.string().max(2000).optional(),
  smtpStatus: z.string().min(1, { error: 'smtpStatus must not be empty' }).max(32).optional(),
  diagnostic: z.string().max(2000).optional(),
  recipient: recipientField,
});
export const emailFailedData = z.strictObject({ reason: nonEmpty('reason', 2000) });
export const emailSuppressedData = z.strictObject({
  reason: nonEmpty('reason', 2000),
  recipient: recipientField,
});
/**
 * `bot: true` — a known link scanner or prefetcher (SPEC §11): kept on the timeline, never counted.
 * `machine: true` — an open no person made (Apple Mail Privacy Protection's prefetch, a security
 * scanner; SPEC §21): not in `opened`/`openRate`, counted apart as `machineOpened`.
 */
export const emailOpenedData = z.strictObject({
  userAgent: z.string().max(1000).optional(),
  bot: z.boolean().optional(),
  machine: z.boolean().optional(),
});
export const emailClickedData = z.strictObject({
  url: nonEmpty('url', 4000),
  userAgent: z.string().max(1000).optional(),
  bot: z.boolean().optional(),
});
export const emailComplainedData = z.strictObject({
  feedbackType: z.string().max(200).optional(),
  recipient: recipientField,
});

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
export const emailDelivered = event('email.delivered', emailDeliveredData.optional().default({}));
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

/** Text any store can hold: U+0000 written as its escape, lone surrogates replaced (a dead letter must never fail). */
export const storableText = (text: string): string =>
  text.replaceAll('\u0000', '\\u0000').replace(new RegExp(LONE_SURROGATE.source, 'g'), '\uFFFD');

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

/**
 * What a field of an event's `data` may hold, in the canonical form Tern's writers append (every
 * field zod accepted, `data` present). Mirrors the `data` schemas above; the unit tests check the
 * two agree field by field and that anything accepted here parses to itself with zod.
 */
type FieldRule =
  | { kind: 'string'; max: number; min?: 1 }
  | { kind: 'id' | 'email' | 'timestamp' | 'tags' | 'bool' | 'bounceType' | 'recipient' };

const text = (max: number, min?: 1): FieldRule =>
  min ? { kind: 'string', max, min } : { kind: 'string', max };
const USER_AGENT = text(1000);
const RECIPIENT: [FieldRule, boolean] = [{ kind: 'recipient' }, false];

/** `data` fields per event type: `[rule, required]`. */
export const CANONICAL_DATA_FIELDS: Readonly<
  Record<EventType, Readonly<Record<string, [FieldRule, boolean]>>>
> = {
  'email.queued': {
    toEmail: [{ kind: 'email' }, true],
    subject: [text(998), true],
    templateId: [{ kind: 'id' }, false],
    tags: [{ kind: 'tags' }, false],
    from: [text(320), false],
    scheduledAt: [{ kind: 'timestamp' }, false],
    projectId: [{ kind: 'id' }, false],
  },
  'email.sent': {
    provider: [text(128, 1), true],
    messageId: [text(998, 1), true],
    providerMessageId: [text(998, 1), false],
  },
  'email.delayed': { reason: [text(2000), false], recipient: RECIPIENT },
  'email.delivered': { recipient: RECIPIENT },
  'email.bounced': {
    bounceType: [{ kind: 'bounceType' }, true],
    reason: [text(2000), false],
    smtpStatus: [text(32, 1), false],
    diagnostic: [text(2000), false],
    recipient: RECIPIENT,
  },
  'email.failed': { reason: [text(2000, 1), true] },
  'email.suppressed': { reason: [text(2000, 1), true], recipient: RECIPIENT },
  'email.cancelled': {},
  'email.opened': {
    userAgent: [USER_AGENT, false],
    bot: [{ kind: 'bool' }, false],
    machine: [{ kind: 'bool' }, false],
  },
  'email.clicked': {
    url: [text(4000, 1), true],
    userAgent: [USER_AGENT, false],
    bot: [{ kind: 'bool' }, false],
  },
  'email.complained': { feedbackType: [text(200), false], recipient: RECIPIENT },
};

/** The `data` of an event type as consumers read it. */
type DataOf<T extends EventType> = Extract<DeliveryEvent, { type: T }>['data'];

/**
 * The personal fields of every event type (SPEC §14; docs/architecture.md § "Personal data and
 * erasure"): what names, or could name, the recipient — its address, the subject written for it,
 * a provider's diagnostic (an SMTP 550 quotes the address), a clicked URL (links carry addresses
 * and tokens), a reader's user agent. The ONE list: the event log holds these only sealed under
 * the recipient's data key (`packages/privacy` sealer) and an erasure scrubs them from every read
 * model. A new personal field is one entry here (typed: a name that is no field of the event fails
 * to compile); a new event type must get a line.
 */
export const PERSONAL_FIELDS: { readonly [T in EventType]: readonly (keyof DataOf<T> & string)[] } = {
  'email.queued': ['toEmail', 'subject'],
  'email.sent': [],
  'email.delayed': ['reason', 'recipient'],
  'email.delivered': ['recipient'],
  'email.bounced': ['reason', 'diagnostic', 'recipient'],
  'email.failed': ['reason'],
  'email.suppressed': ['reason', 'recipient'],
  'email.cancelled': [],
  'email.opened': ['userAgent'],
  'email.clicked': ['url', 'userAgent'],
  'email.complained': ['recipient'],
};

/**
 * What a personal field reads once its data key is gone (erased, past retention): `null` for
 * `email.queued`'s recipient and subject (the contract's "erased"), this text for a required
 * field of another type; an optional one is left out.
 */
export const ERASED_TEXT = '[erased]';

/**
 * What personal field `name` of event `type` reads once its key is gone: null for email.queued's,
 * `[erased]` for a required field, undefined (left out) for an optional one. An outcome that
 * named one recipient of several keeps `recipient: "[erased]"` (the sealer leaves that marker in
 * clear), so it never reads as the whole message's (SPEC §22).
 */
export function erasedValueOf(type: string, name: string): string | null | undefined {
  if (type === 'email.queued') return null;
  if (CANONICAL_DATA_FIELDS[type as EventType]?.[name]?.[1]) return ERASED_TEXT;
  return undefined;
}

/** The personal fields of `type` (none for a type that is no delivery event). */
export const personalFieldsOf = (type: string): readonly string[] =>
  Object.hasOwn(PERSONAL_FIELDS, type) ? PERSONAL_FIELDS[type as EventType] : [];

const ENVELOPE_KEYS = new Set(['id', 'tenantId', 'emailId', 'occurredAt', 'type', 'data']);
const ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;
const EMAIL_RE = z.regexes.email;
/** The pattern of `isoTimestamp` (z.iso.datetime with offsets, any precision). */
const TIMESTAMP_RE = z.regexes.datetime({ offset: true, local: false, precision: null });

const storable = (s: string) => unstorableText(s) === null;

function fieldOk(rule: FieldRule, value: unknown): boolean {
  switch (rule.kind) {
    case 'string':
      return (
        typeof value === 'string' &&
        value.length <= rule.max &&
        value.length >= (rule.min ?? 0) &&
        storable(value)
      );
    case 'id':
      return typeof value === 'string' && ID_RE.test(value);
    case 'email':
      return typeof value === 'string' && value.length <= 320 && EMAIL_RE.test(value);
    case 'timestamp':
      return typeof value === 'string' && TIMESTAMP_RE.test(value);
    case 'bool':
      return typeof value === 'boolean';
    case 'bounceType':
      return value === 'hard' || value === 'soft';
    case 'recipient':
      return (
        value === ERASED_TEXT || (typeof value === 'string' && value.length <= 320 && EMAIL_RE.test(value))
      );
    case 'tags':
      return (
        Array.isArray(value) &&
        value.length <= 50 &&
        value.every((t) => typeof t === 'string' && t.length >= 1 && t.length <= 256 && storable(t))
      );
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

/**
 * A cheap check that a parsed log record is already a canonical event — what ingest, the api and
 * the sender append after validating it with {@link deliveryEventSchema} — so the projector can
 * trust it without a second zod parse. True only for values zod accepts unchanged (the unit tests
 * check this on valid and mutated events); anything else (an older or foreign producer, a poison
 * record) returns false and goes through the schema, which names the reason.
 */
export function isCanonicalDeliveryEvent(value: unknown, now = Date.now()): value is DeliveryEvent {
  if (!isPlainObject(value)) return false;
  let keys = 0;
  for (const k in value) {
    if (!ENVELOPE_KEYS.has(k)) return false;
    keys++;
  }
  if (keys !== ENVELOPE_KEYS.size) return false;
  const { id, tenantId, emailId, occurredAt, type, data } = value;
  if (typeof type !== 'string' || !Object.hasOwn(CANONICAL_DATA_FIELDS, type)) return false;
  if (typeof id !== 'string' || !ID_RE.test(id)) return false;
  if (typeof tenantId !== 'string' || !ID_RE.test(tenantId)) return false;
  if (typeof emailId !== 'string' || !ID_RE.test(emailId)) return false;
  if (typeof occurredAt !== 'string' || !TIMESTAMP_RE.test(occurredAt)) return false;
  const at = Date.parse(occurredAt);
  if (!(at >= OCCURRED_AT_MIN_MS && at < OCCURRED_AT_MAX_MS) || at > now + MAX_FUTURE_SKEW_MS) return false;
  if (!isPlainObject(data)) return false;
  const fields = CANONICAL_DATA_FIELDS[type as EventType];
  for (const k in data) {
    const field = fields[k];
    // zod treats an undefined optional field as absent; JSON never yields one.
    if (field === undefined || data[k] === undefined || !fieldOk(field[0], data[k])) return false;
  }
  for (const [k, [, required]] of Object.entries(fields))
    if (required && !Object.hasOwn(data, k)) return false;
  return true;
}
