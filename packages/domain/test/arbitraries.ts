import { type DeliveryEvent, deliveryEventSchema, EVENT_TYPES, type EventType } from '@tern/contracts';
import fc from 'fast-check';

/**
 * Realistic delivery events for property tests: few distinct instants (so ties are common),
 * written with different UTC offsets and precisions, around a UTC midnight (so an email's
 * createdAt day depends on which email.queued defines it), and short ids (so id order matters).
 */

/** A few real readers (SPEC §26 client dimension): the first human open or click decides. */
const USER_AGENTS = [
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
  'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17029; Pro)',
];

const BASE_MS = Date.parse('2024-05-01T23:58:30.000Z');

/** ISO 8601 of `ms` as seen from `offsetMin` minutes east of UTC. */
export function isoWithOffset(ms: number, offsetMin: number, millis: boolean): string {
  const local = new Date(ms + offsetMin * 60_000).toISOString().slice(0, millis ? 23 : 19);
  if (offsetMin === 0) return `${local}Z`;
  const abs = Math.abs(offsetMin);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `${local}${offsetMin < 0 ? '-' : '+'}${hh}:${mm}`;
}

export const timestampArb: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 0, max: 6 }), fc.constantFrom(0, 0, 120, -300, 330), fc.boolean())
  .map(([step, offset, millis]) => isoWithOffset(BASE_MS + step * 30_000, offset, millis));

const idArb = fc.stringMatching(/^[a-c0-9]{1,3}$/);

const dataArb: Record<EventType, fc.Arbitrary<Record<string, unknown>>> = {
  'email.queued': fc.record(
    {
      toEmail: fc.constantFrom('ada@example.com', 'bob@example.org'),
      subject: fc.constantFrom('Hello', 'Invoice', ''),
      templateId: fc.constantFrom('tpl_a', 'tpl_b'),
      tags: fc.array(fc.constantFrom('x', 'y', 'z'), { maxLength: 3 }),
      from: fc.constant('hello@tern.dev'),
      scheduledAt: timestampArb,
      projectId: fc.constantFrom('prj_a', 'prj_b'),
    },
    { requiredKeys: ['toEmail', 'subject'] },
  ),
  'email.sent': fc.record({
    provider: fc.constantFrom('ses', 'postmark'),
    messageId: fc.stringMatching(/^m-[0-9]{1,3}$/),
  }),
  'email.delayed': fc.constant({}),
  'email.delivered': fc.constant({}),
  'email.bounced': fc.record(
    {
      bounceType: fc.constantFrom('hard', 'soft'),
      smtpStatus: fc.constantFrom('5.1.1', '4.2.2', '5.7.1'),
      diagnostic: fc.constantFrom('550 5.7.1 Message rejected as spam', 'host not found'),
    },
    { requiredKeys: ['bounceType'] },
  ),
  'email.failed': fc.constant({ reason: 'rejected' }),
  'email.suppressed': fc.constant({ reason: 'listed' }),
  'email.cancelled': fc.constant({}),
  'email.opened': fc.record({ userAgent: fc.constantFrom(...USER_AGENTS) }, { requiredKeys: [] }),
  'email.clicked': fc.record(
    { url: fc.constant('https://example.com'), userAgent: fc.constantFrom(...USER_AGENTS) },
    { requiredKeys: ['url'] },
  ),
  'email.complained': fc.constant({}),
};

// email.queued is weighted up so most generated emails become visible.
const typeArb: fc.Arbitrary<EventType> = fc.oneof(
  { arbitrary: fc.constant('email.queued' as const), weight: 2 },
  { arbitrary: fc.constantFrom(...EVENT_TYPES), weight: 8 },
);

export function eventArb(
  tenantIds: readonly string[],
  emailIds: readonly string[],
): fc.Arbitrary<DeliveryEvent> {
  return fc
    .record({
      id: idArb,
      tenantId: fc.constantFrom(...tenantIds),
      emailId: fc.constantFrom(...emailIds),
      type: typeArb,
      occurredAt: timestampArb,
    })
    .chain((envelope) =>
      dataArb[envelope.type].map((data) => deliveryEventSchema.parse({ ...envelope, data })),
    );
}

/** Distinct events (ids unique per tenant, as idempotency is) of the given emails. */
export function distinctEventsArb(
  tenantIds: readonly string[],
  emailIds: readonly string[],
  maxLength: number,
  minLength = 1,
): fc.Arbitrary<DeliveryEvent[]> {
  return fc.uniqueArray(eventArb(tenantIds, emailIds), {
    selector: (e) => `${e.tenantId}/${e.id}`,
    minLength,
    maxLength,
  });
}

/** A permutation of `items`. */
export function permutationArb<T>(items: readonly T[]): fc.Arbitrary<T[]> {
  return fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });
}
