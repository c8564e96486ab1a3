import type { DeliveryEvent, EmailQueued } from '@tern/contracts';
import { createEventStream, type EventLog, type EventSealer, type EventStream } from '@tern/event-log';
import type { Keyring, Sealed, SealItem } from './keyring.js';

/**
 * The personal fields of an event, sealed before it reaches the log. Only `email.queued` names a
 * recipient (`toEmail`) and its `subject`; every other event refers to the email by id.
 */
export const SEALED_FIELDS = ['toEmail', 'subject'] as const;

/** An email.queued with a clear recipient (what Tern's own writers and outside pipelines produce). */
const clearQueued = (e: DeliveryEvent): e is EmailQueued & { data: { toEmail: string } } =>
  e.type === 'email.queued' && typeof e.data.toEmail === 'string';

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

/** The event as the log holds it: its personal fields taken out of `data`, `sealed` in their place. */
function withSealed(e: EmailQueued, sealed: Sealed): unknown {
  const { toEmail: _t, subject: _s, ...rest } = e.data;
  return { ...e, data: { ...rest, sealed } };
}

interface SealedShape {
  tenantId?: unknown;
  emailId?: unknown;
  data?: Record<string, unknown> & { sealed?: Sealed };
}

/** A parsed record whose `data` holds sealed fields (the schema checks the rest after opening). */
function sealedValue(
  value: unknown,
): (SealedShape & { tenantId: string; emailId: string; data: { sealed: Sealed } }) | null {
  if (value === null || typeof value !== 'object') return null;
  const v = value as SealedShape;
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
 * Crypto-shredding of the event log (SPEC §14) as the typed stream's sealer: `seal` creates or
 * reads the batch's data keys in two statements (`Keyring.sealMany`) and seals each clear
 * email.queued; `open` reads a consumed batch's keys in one query (`Keyring.openMany`) and puts
 * the clear fields back — or nulls, when the key is gone (erased, past retention).
 */
export function createSealer(keyring: Keyring): EventSealer {
  return {
    async seal(events) {
      const found: number[] = [];
      for (const [i, e] of events.entries()) if (clearQueued(e)) found.push(i);
      if (found.length === 0) return events;
      const sealed = await keyring.sealMany(
        found.map((i) => sealItem(events[i] as EmailQueued & { data: { toEmail: string } })),
      );
      const out: unknown[] = events.slice();
      for (const [n, i] of found.entries()) out[i] = withSealed(events[i] as EmailQueued, sealed[n]!);
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
        const { sealed: _sealed, ...rest } = value.data;
        const clear: Record<string, string | null> = {};
        for (const name of SEALED_FIELDS) clear[name] = fields?.[name] ?? null;
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
