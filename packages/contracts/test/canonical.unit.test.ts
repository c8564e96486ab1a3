// isCanonicalDeliveryEvent: the projector's cheap check of records Tern appended (issue 10). It
// must never accept what deliveryEventSchema refuses or would change: checked on the schema's own
// shapes, on valid samples, and on many random mutations of them (fast-check).
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  CANONICAL_DATA_FIELDS,
  deliveryEventSchema,
  EVENT_TYPES,
  type EventType,
  emailBounced,
  emailCancelled,
  emailClicked,
  emailComplained,
  emailDelayed,
  emailDelivered,
  emailFailed,
  emailOpened,
  emailQueued,
  emailSent,
  emailSuppressed,
  isCanonicalDeliveryEvent,
  validateEvents,
} from '../src/index.js';

const SCHEMAS: Record<EventType, z.ZodObject> = {
  'email.queued': emailQueued,
  'email.sent': emailSent,
  'email.delayed': emailDelayed,
  'email.delivered': emailDelivered,
  'email.bounced': emailBounced,
  'email.failed': emailFailed,
  'email.suppressed': emailSuppressed,
  'email.cancelled': emailCancelled,
  'email.opened': emailOpened,
  'email.clicked': emailClicked,
  'email.complained': emailComplained,
};

/** The object schema of an event's `data`, under its optional/default wrappers. */
function dataShape(type: EventType): Record<string, z.ZodType> {
  let data = SCHEMAS[type].shape.data as unknown as {
    shape?: Record<string, z.ZodType>;
    _zod: { def: unknown };
  };
  while (data.shape === undefined) data = (data._zod.def as { innerType: typeof data }).innerType;
  return data.shape;
}

const at = new Date().toISOString();
const envelope = { id: 'evt_1', tenantId: 'tenant-1', emailId: 'email.1', occurredAt: at };
/** Every field of every type set (the canonical form: data present). */
const full: Record<EventType, Record<string, unknown>> = {
  'email.queued': {
    toEmail: 'ada@example.com',
    subject: 'Welcome',
    templateId: 'tpl_welcome',
    tags: ['onboarding', 'de'],
    from: 'Tern <hello@tern.dev>',
    scheduledAt: '2024-05-02T08:00:00.000+02:00',
    projectId: 'prj_1',
  },
  'email.sent': { provider: 'ses', messageId: '0100018f-abc' },
  'email.delayed': { reason: 'mailbox busy' },
  'email.delivered': {},
  'email.bounced': {
    bounceType: 'hard',
    reason: 'no such user',
    smtpStatus: '5.1.1',
    diagnostic: 'smtp; 550 5.1.1 <ada@example.com>: Recipient address rejected: User unknown',
  },
  'email.failed': { reason: 'provider rejected' },
  'email.suppressed': { reason: 'on suppression list' },
  'email.cancelled': {},
  'email.opened': { userAgent: 'Mozilla/5.0', bot: false },
  'email.clicked': { url: 'https://example.com/a?b=c', userAgent: 'UA', bot: true },
  'email.complained': { feedbackType: 'abuse' },
};
const sample = (type: EventType) => ({ ...envelope, type, data: { ...full[type] } });

/** The property: accepted by the cheap check ⇒ accepted by zod, unchanged (key order aside). */
function agrees(value: unknown): boolean {
  if (!isCanonicalDeliveryEvent(value)) return true;
  const parsed = deliveryEventSchema.safeParse(value);
  return parsed.success && isDeepStrictEqual(parsed.data, value);
}

describe('isCanonicalDeliveryEvent', () => {
  it.each(EVENT_TYPES)(
    '%s: its field rules name exactly the schema fields, required as in the schema',
    (type) => {
      const shape = dataShape(type);
      const rules = CANONICAL_DATA_FIELDS[type];
      expect(Object.keys(rules).sort()).toEqual(Object.keys(shape).sort());
      for (const [field, [, required]] of Object.entries(rules)) {
        expect(shape[field]!.safeParse(undefined).success, field).toBe(!required);
      }
    },
  );

  it.each(EVENT_TYPES)('%s with every field: accepted, and zod parses it to itself', (type) => {
    const event = sample(type);
    expect(isCanonicalDeliveryEvent(event)).toBe(true);
    expect(deliveryEventSchema.parse(event)).toEqual(event);
    // Required fields only, too.
    const required = Object.fromEntries(
      Object.entries(event.data).filter(([k]) => CANONICAL_DATA_FIELDS[type][k]![1]),
    );
    expect(isCanonicalDeliveryEvent({ ...event, data: required })).toBe(true);
  });

  it('refuses the poison and the non-canonical: zod decides (and names the reason)', () => {
    const q = sample('email.queued');
    for (const bad of [
      { ...q, data: { ...q.data, subject: 'a\u0000b' } },
      { ...q, data: { ...q.data, tags: ['\ud800'] } },
      { ...q, occurredAt: '0000-01-01T00:00:00Z' },
      { ...q, occurredAt: '2024-01-01T00:00:00' },
      { ...q, occurredAt: '2024-01-01T00:00Z' },
      { ...q, data: { ...q.data, scheduledAt: '2024-01-01' } },
      { ...q, occurredAt: new Date(Date.now() + 2 * 86_400_000).toISOString() },
      { ...q, data: { ...q.data, toEmail: 'not an email' } },
      { ...q, data: { ...q.data, extra: 1 } },
      { ...q, extra: 1 },
      { ...sample('email.delivered'), data: undefined },
      { ...q, type: 'email.unknown' },
      { ...q, id: '' },
      { ...sample('email.bounced'), data: { bounceType: 'medium' } },
      { ...sample('email.bounced'), data: { bounceType: 'hard', smtpStatus: '' } },
      { ...sample('email.bounced'), data: { bounceType: 'soft', smtpStatus: '4'.repeat(33) } },
      { ...sample('email.bounced'), data: { bounceType: 'hard', diagnostic: 'x'.repeat(2001) } },
      { ...q, data: { ...q.data, subject: 'x'.repeat(999) } },
      [q],
      null,
    ]) {
      expect(isCanonicalDeliveryEvent(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('never accepts what zod refuses or changes (random mutations of valid events)', () => {
    const weird = fc.oneof(
      fc.anything(),
      fc.string(),
      fc.string({ unit: 'binary' }),
      // Timestamps: valid, unqualified, odd offsets.
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc
        .tuple(fc.date({ noInvalidDate: true }), fc.constantFrom('Z', '+02:00', '-23:59', '+24:00', ''))
        .map(([d, zone]) => d.toISOString().slice(0, 19) + zone),
      fc.constantFrom(
        '',
        '\u0000',
        '\ud800',
        'x'.repeat(129),
        'a@b.co',
        '2024-01-01T00:00:00Z',
        'hard',
        true,
      ),
    );
    const field = fc.constantFrom('id', 'tenantId', 'emailId', 'occurredAt', 'type', 'data', 'extra');
    const dataField = fc.constantFrom(
      ...new Set(Object.values(CANONICAL_DATA_FIELDS).flatMap((f) => Object.keys(f))),
      'other',
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...EVENT_TYPES),
        fc.array(fc.tuple(fc.boolean(), field, dataField, weird, fc.boolean()), { maxLength: 3 }),
        (type, mutations) => {
          const event: Record<string, unknown> = sample(type);
          for (const [inData, key, dataKey, value, remove] of mutations) {
            if (inData && typeof event.data === 'object' && event.data !== null) {
              const data = { ...(event.data as Record<string, unknown>) };
              if (remove) delete data[dataKey];
              else data[dataKey] = value;
              event.data = data;
            } else if (remove) delete event[key];
            else event[key] = value;
          }
          return agrees(event) && agrees(JSON.parse(JSON.stringify(event) ?? 'null'));
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('validateEvents takes the cheap path for canonical events (ingest, issue 10)', () => {
  it('returns canonical events as zod would parse them, and still names the issues of the rest', () => {
    const events = EVENT_TYPES.map((type) => sample(type));
    const r = validateEvents(events);
    expect(r).toEqual({ ok: true, events: events.map((e) => deliveryEventSchema.parse(e)) });
    // An erased view (null recipient) is never canonical, and ingest refuses it by name.
    const queued = sample('email.queued');
    const erased = { ...queued, data: { ...queued.data, toEmail: null } };
    expect(isCanonicalDeliveryEvent(erased)).toBe(false);
    expect(validateEvents([queued, erased])).toEqual({
      ok: false,
      issues: [{ index: 1, path: 'data.toEmail', message: 'toEmail must be an email address' }],
    });
  });
});
