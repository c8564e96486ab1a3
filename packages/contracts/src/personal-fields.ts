import { CANONICAL_DATA_FIELDS } from './canonical-events.js';
import { ERASED_TEXT } from './event-data.js';
import type { DeliveryEvent, EventType } from './events.js';

/**
 * The personal fields of the delivery events (SPEC §14): what the event log seals and an erasure
 * scrubs.
 */

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
