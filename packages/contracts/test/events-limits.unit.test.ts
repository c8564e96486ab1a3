// The fast path of validateEvents (isCanonicalDeliveryEvent) must agree with zod at every limit
// (issue 33): whatever the fast path accepts, zod accepts unchanged; whatever zod refuses, the
// fast path refuses too. Arbitraries sit on each side of each limit.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  deliveryEventSchema,
  ingestBatchSchema,
  isCanonicalDeliveryEvent,
  MAX_EVENTS_PER_REQUEST,
  validateEvents,
} from '../src/index.js';

const NOW = Date.UTC(2026, 0, 15);
const envelope = {
  id: 'evt_1',
  tenantId: 'tenant-1',
  emailId: 'em_1',
  occurredAt: '2026-01-15T00:00:00.000Z',
};
const queued = (data: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  ...envelope,
  type: 'email.queued',
  data: { toEmail: 'ada@example.com', subject: 'Hi', ...data },
  ...over,
});
const emailOfLength = (n: number) => `a@${'b'.repeat(n - 6)}.com`;

/** zod's verdict: accepted unchanged, accepted but changed, or refused. */
function zodVerdict(value: unknown): 'same' | 'changed' | 'refused' {
  const r = deliveryEventSchema.safeParse(value);
  if (!r.success) return 'refused';
  return isDeepStrictEqual(r.data, value) ? 'same' : 'changed';
}

function agrees(value: unknown): void {
  const fast = isCanonicalDeliveryEvent(value, NOW);
  const verdict = zodVerdict(value);
  if (fast) expect(verdict, JSON.stringify(value).slice(0, 200)).toBe('same');
  if (verdict === 'refused') expect(fast).toBe(false);
}

describe('the fast path refuses what zod refuses, at each limit of issue 33', () => {
  it.each([
    ['numeric templateId', queued({ templateId: 123 })],
    ['numeric projectId', queued({ projectId: 7 })],
    ['toEmail of 321 characters', queued({ toEmail: emailOfLength(321) })],
    ['51 tags', queued({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) })],
    ['an empty tag', queued({ tags: [''] })],
    ['a 257-character tag', queued({ tags: ['x'.repeat(257)] })],
    ['type as an array', queued({}, { type: ['email.queued'] })],
    ['occurredAt as an array', queued({}, { occurredAt: [envelope.occurredAt] })],
    ['subject null', queued({ subject: null })],
    ['subject of 999 characters', queued({ subject: 's'.repeat(999) })],
    ['occurredAt before 1970', queued({}, { occurredAt: '1969-12-31T23:59:59.999Z' })],
  ])('%s → refused by both (validateEvents gives an issue)', (_what, event) => {
    expect(isCanonicalDeliveryEvent(event, NOW)).toBe(false);
    const result = validateEvents([event]);
    expect(result.ok).toBe(false);
  });

  it.each([
    ['toEmail of exactly 320 characters', queued({ toEmail: emailOfLength(320) })],
    ['exactly 50 tags', queued({ tags: Array.from({ length: 50 }, (_, i) => `t${i}`) })],
    ['a 1- and a 256-character tag', queued({ tags: ['x', 'y'.repeat(256)] })],
    ['subject of exactly 998 characters', queued({ subject: 's'.repeat(998) })],
    ['occurredAt exactly 1970-01-01', queued({}, { occurredAt: '1970-01-01T00:00:00.000Z' })],
  ])('%s → accepted by the fast path, and by zod unchanged', (_what, event) => {
    expect(isCanonicalDeliveryEvent(event, NOW)).toBe(true);
    expect(zodVerdict(event)).toBe('same');
    expect(validateEvents([event])).toEqual({ ok: true, events: [event] });
  });

  it('batches: 0 and 1001 events refused, 1 and 1000 accepted', () => {
    expect(MAX_EVENTS_PER_REQUEST).toBe(1000);
    const batch = (n: number) => ({ events: Array.from({ length: n }, () => queued({})) });
    expect(ingestBatchSchema.safeParse(batch(0)).success).toBe(false);
    expect(ingestBatchSchema.safeParse(batch(1)).success).toBe(true);
    expect(ingestBatchSchema.safeParse(batch(1000)).success).toBe(true);
    const over = ingestBatchSchema.safeParse(batch(1001));
    expect(over.success).toBe(false);
    expect(over.error?.issues[0]?.message).toBe('events must contain at most 1000 events');
    expect(ingestBatchSchema.safeParse(batch(0)).error?.issues[0]?.message).toBe(
      'events must contain at least 1 event',
    );
  });
});

describe('property: the fast path and zod agree on every event near the limits', () => {
  // Each field is usually valid (so whole events often are) and sometimes just past a limit.
  const mostly = <T, U>(valid: fc.Arbitrary<T>, invalid: fc.Arbitrary<U>) =>
    fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: invalid, weight: 1 });
  const sized = (lengths: number[]) => fc.constantFrom(...lengths).map((n) => 'x'.repeat(n));
  const id = mostly(
    fc.constantFrom('tpl_1', 'a', 'x'.repeat(128)),
    fc.oneof(fc.constantFrom('x'.repeat(129), '', 'bad id', 'ü'), fc.integer(), fc.constant(null)),
  );
  const tag = mostly(sized([1, 2, 255, 256]), fc.oneof(sized([0, 257]), fc.constant('\u0000'), fc.integer()));
  const tags = mostly(
    fc.oneof(fc.array(tag, { maxLength: 3 }), fc.array(fc.constant('t'), { minLength: 49, maxLength: 50 })),
    fc.oneof(fc.array(fc.constant('t'), { minLength: 51, maxLength: 51 }), fc.constant('onboarding')),
  );
  const occurredAt = mostly(
    fc.constantFrom(
      '1970-01-01T00:00:00.000Z',
      '2149-06-05T23:59:59.999Z',
      '2026-01-16T00:00:00.000Z',
      '2026-01-15T01:00:00+01:00',
    ),
    fc.oneof(
      fc.constantFrom(
        '1969-12-31T23:59:59.999Z',
        '2149-06-06T00:00:00.000Z',
        '2026-01-16T00:00:00.001Z',
        'yesterday',
      ),
      fc.constant(['2026-01-15T00:00:00.000Z']),
      fc.integer(),
    ),
  );
  const queuedData = fc.record(
    {
      toEmail: mostly(
        fc.constantFrom(319, 320).map(emailOfLength),
        fc.oneof(fc.constant(emailOfLength(321)), fc.constantFrom('not-an-email', null), fc.integer()),
      ),
      subject: mostly(
        sized([0, 1, 997, 998]),
        fc.oneof(sized([999]), fc.constantFrom(null, '\uD800'), fc.integer()),
      ),
      templateId: id,
      projectId: id,
      tags,
      from: mostly(sized([0, 320]), fc.oneof(sized([321]), fc.integer())),
      scheduledAt: mostly(fc.constant('2026-01-15T00:00:00Z'), fc.constant('soon')),
      extra: fc.constant('field'),
    },
    { requiredKeys: [] },
  );
  const event = fc.record({
    id: mostly(fc.constant('evt_1'), id),
    tenantId: fc.constant('tenant-1'),
    emailId: fc.constant('em_1'),
    occurredAt,
    type: mostly(fc.constant('email.queued'), fc.constantFrom(['email.queued'], 'email.unknown')),
    data: mostly(
      queuedData.map(({ extra, ...d }) => (extra !== undefined && d.from === '' ? { ...d, extra } : d)),
      fc.constantFrom(null, []),
    ),
  });

  it('isCanonical ⇒ zod accepts unchanged; zod refuses ⇒ not canonical', () => {
    fc.assert(
      fc.property(event, (e) => {
        agrees(e);
      }),
      { numRuns: 3000, seed: 33 },
    );
  });

  it('generated events reach both verdicts (the property is not vacuous)', () => {
    const samples = fc.sample(event, { numRuns: 3000, seed: 33 });
    const fast = samples.filter((e) => isCanonicalDeliveryEvent(e, NOW)).length;
    expect(fast).toBeGreaterThan(0);
    expect(fast).toBeLessThan(samples.length);
  });
});
