import {
  type DeliveryEvent,
  type EmailQueued,
  ERASED_TEXT,
  erasedValueOf,
  INBOUND_PERSONAL_FIELDS,
  type InboundEvent,
  type LogEvent,
  PERSONAL_FIELDS,
  personalFieldsOf,
} from '@tern/contracts';
import { createEventStream, type EventLog, type EventSealer, type EventStream } from '@tern/event-log';
import type { EmailSealItem, Keyring, Sealed, SealItem } from './keyring/index.js';

/**
 * The personal fields of `email.queued` (its recipient and subject). Every event type's personal
 * fields are listed in ONE place, `PERSONAL_FIELDS` of `@tern/contracts`, next to the event
 * contracts; this is its `email.queued` line.
 */
export const SEALED_FIELDS = PERSONAL_FIELDS['email.queued'];

/** An email.queued with a clear recipient (what Tern's own writers and outside pipelines produce). */
const clearQueued = (e: LogEvent): e is EmailQueued & { data: { toEmail: string } } =>
  e.type === 'email.queued' && typeof e.data.toEmail === 'string';

const isReceived = (e: LogEvent): e is InboundEvent => e.type === 'email.received';

/**
 * An inbound message's personal fields (SPEC §24) as sealed strings: sealed under its SENDER's
 * data key (the key is recorded for the inbound id), so erasing the sender erases them.
 */
function receivedItem(e: InboundEvent): SealItem {
  const d = e.data;
  return {
    tenantId: e.tenantId,
    emailId: e.inboundId,
    email: d.from,
    at: new Date(e.occurredAt),
    fields: { from: d.from, to: JSON.stringify(d.to), subject: d.subject, messageId: d.messageId },
  };
}

function withoutReceivedPersonal(e: InboundEvent, sealed: Sealed): unknown {
  const rest: Record<string, unknown> = { ...e.data };
  for (const name of INBOUND_PERSONAL_FIELDS) delete rest[name];
  return { ...e, data: { ...rest, sealed } };
}

/** The clear fields of an opened email.received, or what they read once erased. */
function receivedClear(fields: Record<string, string | null> | null): Record<string, unknown> {
  if (!fields) return { from: ERASED_TEXT, to: [], subject: null, messageId: null };
  let to: unknown = [];
  try {
    to = JSON.parse(fields.to ?? '[]');
  } catch {
    to = [];
  }
  return {
    from: fields.from ?? ERASED_TEXT,
    to,
    subject: fields.subject ?? null,
    messageId: fields.messageId ?? null,
  };
}

const dataOf = (e: DeliveryEvent) => (e.data ?? {}) as Record<string, unknown>;

/** The personal fields an event carries (clear, present), or null when it carries none. */
function personalOf(e: LogEvent): Record<string, string | null> | null {
  if (e.type === 'email.queued' || !Object.hasOwn(PERSONAL_FIELDS, e.type)) return null;
  const data = dataOf(e as DeliveryEvent);
  let fields: Record<string, string | null> | null = null;
  for (const name of personalFieldsOf(e.type)) {
    const v = data[name];
    if (v === undefined) continue;
    fields ??= {};
    fields[name] = typeof v === 'string' ? v : null;
  }
  return fields;
}

function sealItem(e: EmailQueued & { data: { toEmail: string } }): SealItem {
  const fields: Record<string, string | null> = {};
  for (const name of SEALED_FIELDS) {
    if (!(name in e.data)) continue;
    const v = e.data[name];
    fields[name] = typeof v === 'string' ? v : null;
  }
  return {
    tenantId: e.tenantId,
    emailId: e.emailId,
    email: e.data.toEmail,
    at: new Date(e.occurredAt),
    fields,
  };
}

/** `data` without the personal fields of `type`. */
function withoutPersonal(type: string, data: Record<string, unknown>): Record<string, unknown> {
  const rest = { ...data };
  for (const name of personalFieldsOf(type)) delete rest[name];
  return rest;
}

/**
 * The event as the log holds it: its personal fields taken out of `data`, `sealed` in their place.
 * An outcome about one recipient of several keeps `recipient: "[erased]"` in clear — no address,
 * only the fact that it named one — so once its key is gone it still does not read as the whole
 * message's (SPEC §22); opened, the sealed address replaces the marker.
 */
function withSealed(e: DeliveryEvent, sealed: Sealed): unknown {
  const named = Object.hasOwn(dataOf(e), 'recipient') ? { recipient: ERASED_TEXT } : {};
  return { ...e, data: { ...withoutPersonal(e.type, dataOf(e)), ...named, sealed } };
}

/**
 * What a personal field reads when its key is gone: null for email.queued's (the contract's
 * "erased"), `[erased]` for a required field of another type, absent for an optional one.
 */
function erasedFields(type: string): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const name of personalFieldsOf(type)) {
    const v = erasedValueOf(type, name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** The recipient an outcome names (SPEC §22), when it names one in clear: its fields go under that recipient's key. */
function namedRecipient(fields: Record<string, string | null>): string | null {
  const r = fields.recipient;
  return typeof r === 'string' && r !== ERASED_TEXT ? r : null;
}

/** An event whose email has no key (unknown, erased, past retention): its personal fields are not kept. */
function withErased(e: DeliveryEvent): unknown {
  const named = Object.hasOwn(dataOf(e), 'recipient') ? { recipient: ERASED_TEXT } : {};
  return { ...e, data: { ...withoutPersonal(e.type, dataOf(e)), ...erasedFields(e.type), ...named } };
}

interface SealedShape {
  type?: unknown;
  tenantId?: unknown;
  emailId?: unknown;
  inboundId?: unknown;
  data?: Record<string, unknown> & { sealed?: Sealed };
}

/** A parsed record whose `data` holds sealed fields (the schema checks the rest after opening). */
function sealedValue(
  value: unknown,
): (SealedShape & { tenantId: string; emailId: string; data: { sealed: Sealed } }) | null {
  if (value === null || typeof value !== 'object') return null;
  const v = value as SealedShape;
  // An inbound message's fields are sealed under the key recorded for its inbound id (SPEC §24).
  if (v.type === 'email.received' && typeof v.inboundId === 'string' && v.emailId === undefined)
    return sealedValue({ ...v, emailId: v.inboundId });
  const sealed = v.data !== null && typeof v.data === 'object' ? v.data.sealed : undefined;
  if (
    typeof v.tenantId !== 'string' ||
    typeof v.emailId !== 'string' ||
    sealed === null ||
    typeof sealed !== 'object'
  )
    return null;
  return v as SealedShape & { tenantId: string; emailId: string; data: { sealed: Sealed } };
}

/**
 * Crypto-shredding of the event log (SPEC §14) as the typed stream's sealer. `seal`: each clear
 * email.queued is sealed under its recipient's data key (`Keyring.sealMany`: two statements for the
 * batch's keys); then the personal fields of every other event (`PERSONAL_FIELDS`: a bounce's
 * diagnostic, a clicked URL…) under the key of its email's email.queued (`Keyring.sealForEmails`,
 * one query) — or, when the email has none (unknown, erased, past retention), they are not kept.
 * `open` reads a consumed batch's keys in one query and puts the clear fields back — or what an
 * erased field reads (`erasedFields`) when the key is gone.
 */
export function createSealer(keyring: Keyring): EventSealer {
  return {
    async seal(events) {
      const queued: number[] = [];
      const later: { index: number; item: EmailSealItem }[] = [];
      const named: { index: number; item: SealItem }[] = [];
      const received: number[] = [];
      for (const [i, e] of events.entries()) {
        if (clearQueued(e)) queued.push(i);
        else if (isReceived(e)) {
          if (typeof e.data.from === 'string') received.push(i);
        } else {
          const fields = personalOf(e);
          if (!fields) continue;
          const emailId = (e as DeliveryEvent).emailId;
          const recipient = namedRecipient(fields);
          // An outcome of one of several recipients: under that recipient's own key, so erasing
          // it erases this and erasing another recipient does not (SPEC §22).
          if (recipient !== null)
            named.push({
              index: i,
              item: {
                tenantId: e.tenantId,
                emailId,
                email: recipient,
                at: new Date((e as DeliveryEvent).occurredAt),
                fields,
              },
            });
          else later.push({ index: i, item: { tenantId: e.tenantId, emailId, fields } });
        }
      }
      if (queued.length === 0 && later.length === 0 && named.length === 0 && received.length === 0)
        return events;
      const out: unknown[] = events.slice();
      if (received.length > 0) {
        // Under the sender's key, not recorded as the inbound id's: no later event is sealed by it.
        const sealed = await keyring.sealForRecipients(
          received.map((i) => receivedItem(events[i] as InboundEvent)),
        );
        for (const [n, i] of received.entries())
          out[i] = withoutReceivedPersonal(events[i] as InboundEvent, sealed[n]!);
      }
      // email.queued first: a batch holding an email's email.queued and its bounce seals both.
      if (queued.length > 0) {
        const sealed = await keyring.sealMany(
          queued.map((i) => sealItem(events[i] as EmailQueued & { data: { toEmail: string } })),
        );
        for (const [n, i] of queued.entries()) out[i] = withSealed(events[i] as DeliveryEvent, sealed[n]!);
      }
      if (named.length > 0) {
        const sealed = await keyring.sealForRecipients(named.map((n) => n.item));
        for (const [n, { index }] of named.entries())
          out[index] = withSealed(events[index] as DeliveryEvent, sealed[n]!);
      }
      if (later.length > 0) {
        const sealed = await keyring.sealForEmails(later.map((l) => l.item));
        for (const [n, { index }] of later.entries()) {
          const e = events[index] as DeliveryEvent;
          const s = sealed[n];
          out[index] = s ? withSealed(e, s) : withErased(e);
        }
      }
      return out;
    },
    async open(values) {
      const found: {
        index: number;
        value: SealedShape & { tenantId: string; emailId: string; data: { sealed: Sealed } };
      }[] = [];
      for (const [index, raw] of values.entries()) {
        const value = sealedValue(raw);
        if (value) found.push({ index, value });
      }
      if (found.length === 0) return new Set();
      const opened = await keyring.openMany(
        found.map(({ value }) => ({
          tenantId: value.tenantId,
          emailId: value.emailId,
          sealed: value.data.sealed,
        })),
      );
      for (const [n, { value }] of found.entries()) {
        const fields = opened[n];
        const type = typeof value.type === 'string' ? value.type : 'email.queued';
        const { sealed: _sealed, ...rest } = value.data;
        if (type === 'email.received') {
          const target = values[found[n]!.index] as { data: Record<string, unknown> };
          target.data = { ...rest, ...receivedClear(fields ?? null) };
          continue;
        }
        const clear: Record<string, string | null> = fields ? {} : erasedFields(type);
        if (fields)
          for (const name of personalFieldsOf(type)) {
            const v = fields[name];
            if (typeof v === 'string') clear[name] = v;
            else if (type === 'email.queued') clear[name] = null;
          }
        value.data = { ...rest, ...clear } as typeof value.data;
      }
      return new Set(found.map((f) => f.index));
    },
  };
}

/**
 * The event log as every Tern service sees it: appends seal personal fields (Tern's own sends,
 * campaigns, sequences, and `POST /events` of outside pipelines all append through it), consumers
 * get them opened. The log underneath (Kafka topic, `event_log` table) never holds them in clear.
 */
export const sealedEventStream = (log: EventLog, keyring: Keyring): EventStream =>
  createEventStream(log, { sealer: createSealer(keyring) });
