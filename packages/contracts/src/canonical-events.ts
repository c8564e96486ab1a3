import { z } from 'zod';
import { ERASED_TEXT } from './event-data.js';
import type { DeliveryEvent, EventType } from './events.js';
import { MAX_FUTURE_SKEW_MS, OCCURRED_AT_MAX_MS, OCCURRED_AT_MIN_MS, unstorableText } from './storable.js';

/**
 * The cheap check of a delivery event already in canonical form (issue 10): what ingest and the
 * projector trust without a second zod parse of `deliveryEventSchema` (`events.ts`).
 */

/**
 * What a field of an event's `data` may hold, in the canonical form Tern's writers append (every
 * field zod accepted, `data` present). Mirrors the `data` schemas (`event-data.ts`); the unit
 * tests check the two agree field by field and that anything accepted here parses to itself with
 * zod.
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
    campaignId: [{ kind: 'id' }, false],
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
