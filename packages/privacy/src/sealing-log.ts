import type { ConsumedRecord, EventLog, EventLogRecord } from '@tern/event-log';
import type { Keyring, Sealed } from './keyring.js';

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

async function sealParsed(keyring: Keyring, record: EventLogRecord, e: ClearQueued): Promise<EventLogRecord> {
  const fields: Record<string, string | null> = {};
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e.data)) {
    if ((SEALED_FIELDS as readonly string[]).includes(k)) fields[k] = typeof v === 'string' ? v : null;
    else rest[k] = v;
  }
  const sealed = await keyring.seal(e.tenantId, e.emailId, e.data.toEmail, new Date(e.occurredAt), fields);
  return { key: record.key, value: JSON.stringify({ ...e, data: { ...rest, sealed } }) };
}

/**
 * Seals one record's personal fields; a record that is not a clear email.queued (or that the
 * schema will refuse anyway) passes unchanged.
 */
export async function sealRecord(keyring: Keyring, record: EventLogRecord): Promise<EventLogRecord> {
  if (!record.value.includes('"email.queued"')) return record;
  const e = parse(record.value);
  return clearQueued(e) ? sealParsed(keyring, record, e) : record;
}

/** Seals a batch: the keys it needs are created or read in two statements, then each record is sealed. */
export async function sealRecords(keyring: Keyring, records: EventLogRecord[]): Promise<EventLogRecord[]> {
  const parsed = records.map((r) => {
    if (!r.value.includes('"email.queued"')) return null;
    const e = parse(r.value);
    return clearQueued(e) ? e : null;
  });
  const needed = parsed.flatMap((e) =>
    e === null ? [] : [{ tenantId: e.tenantId, email: e.data.toEmail, at: new Date(e.occurredAt) }],
  );
  if (needed.length === 0) return records;
  await keyring.prepare(needed);
  return Promise.all(records.map((r, i) => (parsed[i] ? sealParsed(keyring, r, parsed[i]) : r)));
}

/**
 * Opens the sealed fields of a consumed batch: `data.sealed` is replaced by the clear fields, or
 * by nulls when the key is gone (erased, past retention). The keys of the batch are read in one
 * query.
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
  await keyring.prefetch(found.map((f) => ({ tenantId: f.event.tenantId, sealed: f.sealed })));
  const out = batch.slice();
  for (const { index, event, sealed } of found) {
    const fields = await keyring.open(event.tenantId, event.emailId, sealed);
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
