import type { ConsumedRecord, EventLog, EventLogRecord } from '@tern/event-log';
import type { Keyring, Sealed, SealItem } from './keyring.js';

/**
 * The personal fields of an event, sealed before it reaches the log. Only `email.queued` names a
 * recipient (`toEmail`) and its `subject`; every other event refers to the email by id.
 */
export const SEALED_FIELDS = ['toEmail', 'subject'] as const;

interface QueuedShape {
  type?: unknown;
  tenantId?: unknown;
  emailId?: unknown;
  occurredAt?: unknown;
  data?: Record<string, unknown> & { sealed?: Sealed };
}

function parse(value: string): QueuedShape | null {
  try {
    const parsed = JSON.parse(value) as unknown;
    return parsed !== null && typeof parsed === 'object' ? (parsed as QueuedShape) : null;
  } catch {
    return null;
  }
}

/** An email.queued with a clear recipient (what Tern's own writers and outside pipelines produce). */
function clearQueued(e: QueuedShape | null): e is ClearQueued {
  return (
    e !== null &&
    e.type === 'email.queued' &&
    typeof e.tenantId === 'string' &&
    typeof e.emailId === 'string' &&
    typeof e.occurredAt === 'string' &&
    !Number.isNaN(Date.parse(e.occurredAt)) &&
    e.data !== null &&
    typeof e.data === 'object' &&
    e.data.sealed === undefined &&
    typeof e.data.toEmail === 'string'
  );
}

type ClearQueued = QueuedShape & {
  tenantId: string;
  emailId: string;
  occurredAt: string;
  data: Record<string, unknown> & { toEmail: string };
};

/** The event with its personal fields taken out of `data` and `sealed` put in their place. */
function withSealed(e: ClearQueued, sealed: Sealed): string {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e.data)) if (!isSealedField(k)) rest[k] = v;
  return JSON.stringify({ ...e, data: { ...rest, sealed } });
}

const isSealedField = (k: string): boolean => k === 'toEmail' || k === 'subject';

function sealItem(e: ClearQueued): SealItem {
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

/**
 * Seals one record's personal fields; a record that is not a clear email.queued (or that the
 * schema will refuse anyway) passes unchanged.
 */
export async function sealRecord(keyring: Keyring, record: EventLogRecord): Promise<EventLogRecord> {
  const [sealed] = await sealRecords(keyring, [record]);
  return sealed!;
}

/**
 * Seals a batch: the keys it needs are created or read in two statements (`Keyring.sealMany`),
 * then each clear email.queued is sealed and written out again; every other record passes as is.
 */
export async function sealRecords(keyring: Keyring, records: EventLogRecord[]): Promise<EventLogRecord[]> {
  const found: { index: number; event: ClearQueued }[] = [];
  for (const [index, record] of records.entries()) {
    if (!record.value.includes('"email.queued"')) continue;
    const e = parse(record.value);
    if (clearQueued(e)) found.push({ index, event: e });
  }
  if (found.length === 0) return records;
  const sealed = await keyring.sealMany(found.map((f) => sealItem(f.event)));
  const out = records.slice();
  for (const [n, { index, event }] of found.entries()) {
    out[index] = { key: records[index]!.key, value: withSealed(event, sealed[n]!) };
  }
  return out;
}

/**
 * Opens the sealed fields of a consumed batch: `data.sealed` is replaced by the clear fields, or
 * by nulls when the key is gone (erased, past retention). The keys of the batch are read in one
 * query (`Keyring.openMany`).
 */
export async function openRecords<R extends EventLogRecord>(keyring: Keyring, batch: R[]): Promise<R[]> {
  const found: {
    index: number;
    event: QueuedShape & { tenantId: string; emailId: string };
    sealed: Sealed;
  }[] = [];
  for (const [index, record] of batch.entries()) {
    if (!record.value.includes('"sealed"')) continue;
    const e = parse(record.value);
    const sealed = e?.data?.sealed;
    if (!e || typeof e.tenantId !== 'string' || typeof e.emailId !== 'string' || !sealed) continue;
    found.push({ index, event: e as QueuedShape & { tenantId: string; emailId: string }, sealed });
  }
  if (found.length === 0) return batch;
  const opened = await keyring.openMany(
    found.map((f) => ({ tenantId: f.event.tenantId, emailId: f.event.emailId, sealed: f.sealed })),
  );
  const out = batch.slice();
  for (const [n, { index, event }] of found.entries()) {
    const fields = opened[n];
    const { sealed: _sealed, ...rest } = event.data ?? {};
    const clear: Record<string, string | null> = {};
    for (const name of SEALED_FIELDS) clear[name] = fields?.[name] ?? null;
    out[index] = { ...batch[index]!, value: JSON.stringify({ ...event, data: { ...rest, ...clear } }) };
  }
  return out;
}

/**
 * The event log as every Tern service sees it: appends seal personal fields (Tern's own sends,
 * campaigns, sequences, and `POST /events` of outside pipelines all append through it), consumers
 * get them opened. The log underneath (Kafka topic, `event_log` table) never holds them in clear.
 */
export function sealingEventLog(inner: EventLog, keyring: Keyring): EventLog {
  return {
    async append(records) {
      await inner.append(await sealRecords(keyring, records));
    },
    consume(opts) {
      return inner.consume({
        ...opts,
        handle: async (batch: ConsumedRecord[]) => opts.handle(await openRecords(keyring, batch)),
      });
    },
    lag: (group) => inner.lag(group),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}
