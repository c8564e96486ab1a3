import {
  type DeliveryEvent,
  type DomainEvent,
  deliveryEventSchema,
  domainEventSchema,
  formatPosition,
  type InboundEvent,
  inboundEventSchema,
  isCanonicalDeliveryEvent,
  type LogEvent,
  logEventKey,
  looksLikeDomainEvent,
  looksLikeInboundEvent,
  storableText,
} from '@tern/contracts';
import type { ConsumedRecord, EventLog, EventLogConsumer, EventLogRecord, PartitionSpan } from './port.js';

/**
 * The event log as every Tern service uses it: typed events in, typed events out — an email's
 * delivery events, and a sending domain's `domain.verified`/`domain.failed` (SPEC §20). The records underneath (`EventLog`, a Kafka topic or a Postgres table) are this module's
 * business: nobody else encodes an event, parses a record or seals a field.
 */

/** A record no store can hold as an event: kept in `dead_letters` by the projector, skipped by the others. */
export interface DeadLetter {
  /** The record as received (its sealed fields opened), made storable. */
  payload: string;
  /** Why it is not an event: the schema's issues, "value is not JSON". */
  reason: string;
}

/** One consumed batch: every record of it, a parsed event or a dead letter, each kind in log order. */
export interface EventBatch {
  events: DeliveryEvent[];
  /** Sending domains' events: no read model folds them; the dispatcher delivers them. */
  domainEvents: DomainEvent[];
  /** Inbound messages' `email.received` (SPEC §24): no delivery fold; the dispatcher announces them. */
  inboundEvents: InboundEvent[];
  deadLetters: DeadLetter[];
  /** The last offset of each partition this batch held (set by the stream's `consume`): where a reader stands. */
  positions?: ReadonlyMap<number, string>;
}

export interface StreamConsumeOptions {
  /** Named consumer group: positions are committed per group. */
  group: string;
  /** Where a group without a committed position starts: the first record (true) or the end (false, default). */
  fromBeginning?: boolean;
  maxBatchSize?: number;
  maxWaitMs?: number;
  /** `ConsumeOptions.lingerMs`: how long a batch short of full may wait for more records. */
  lingerMs?: number;
  /** Resolve → the batch is committed. Throw → nothing is committed and the batch comes again (after a backoff). */
  handle(batch: EventBatch): Promise<void>;
}

/** What a writer of delivery events needs of the stream (the send path: it appends `email.queued`). */
export interface DeliveryEventAppender {
  append(events: readonly DeliveryEvent[]): Promise<void>;
}

export interface EventStream {
  /** Resolves once the log durably holds every event; rejects with EventLogUnavailableError when it cannot. */
  append(events: readonly LogEvent[]): Promise<void>;
  /** The partition `append` puts each key's events on (`EventLog.partitionsOf`; a key as `logEventKey` gives it). */
  partitionsOf(keys: readonly string[]): Promise<number[]>;
  consume(opts: StreamConsumeOptions): Promise<EventLogConsumer>;
  /** Records not yet committed by the group. */
  lag(group: string): Promise<number>;
  /** Each partition's span now (`EventLog.spans`). */
  spans(): Promise<PartitionSpan[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Seals the personal fields of events before they reach the log and opens them when a batch is
 * consumed (crypto-shredding, SPEC §14: `sealer` of `packages/privacy`). Works on the JSON values
 * of the records, so a record is parsed once.
 */
export interface EventSealer {
  /** The values to append, one per event and in order: a copy with `sealed` where the event names a person. */
  seal(events: readonly LogEvent[]): Promise<readonly unknown[]>;
  /** Opens, in place, the sealed fields of a consumed batch's values; returns the indexes it opened. */
  open(values: unknown[]): Promise<ReadonlySet<number>>;
}

const UNPARSED = Symbol('unparsed');

const reasonOf = (issues: readonly { path: PropertyKey[]; message: string }[]) =>
  issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ');

/** A parsed value as an event, or the reason it is none (the schema's issues). */
function asEvent(
  value: unknown,
): { event: DeliveryEvent } | { domain: DomainEvent } | { inbound: InboundEvent } | { reason: string } {
  // Records Tern appended were validated then: a cheap check trusts them, zod runs only for the rest.
  if (isCanonicalDeliveryEvent(value)) return { event: value };
  if (looksLikeInboundEvent(value)) {
    const inbound = inboundEventSchema.safeParse(value);
    return inbound.success ? { inbound: inbound.data } : { reason: reasonOf(inbound.error.issues) };
  }
  if (looksLikeDomainEvent(value)) {
    const domain = domainEventSchema.safeParse(value);
    return domain.success ? { domain: domain.data } : { reason: reasonOf(domain.error.issues) };
  }
  const parsed = deliveryEventSchema.safeParse(value);
  if (parsed.success) return { event: parsed.data };
  return { reason: reasonOf(parsed.error.issues) };
}

function parseValues(records: readonly ConsumedRecord[]): unknown[] {
  return records.map((r) => {
    try {
      return JSON.parse(r.value) as unknown;
    } catch {
      return UNPARSED;
    }
  });
}

/** The parsed values of a batch as events and dead letters; `opened`: the values whose sealed fields were opened. */
function toBatch(
  records: readonly ConsumedRecord[],
  values: readonly unknown[],
  opened: ReadonlySet<number>,
): EventBatch {
  const events: DeliveryEvent[] = [];
  const domainEvents: DomainEvent[] = [];
  const inboundEvents: InboundEvent[] = [];
  const deadLetters: DeadLetter[] = [];
  for (const [i, value] of values.entries()) {
    const raw = records[i]!.value;
    if (value === UNPARSED) {
      deadLetters.push({ payload: storableText(raw), reason: 'value is not JSON' });
      continue;
    }
    const found = asEvent(value);
    if ('event' in found) events.push(found.event);
    else if ('domain' in found) domainEvents.push(found.domain);
    else if ('inbound' in found) inboundEvents.push(found.inbound);
    else
      deadLetters.push({
        payload: storableText(opened.has(i) ? JSON.stringify(value) : raw),
        reason: storableText(found.reason),
      });
  }
  return { events, domainEvents, inboundEvents, deadLetters };
}

/** A batch of records that hold no sealed field, read synchronously (benches measure this stage alone). */
export const decodeRecords = (records: readonly ConsumedRecord[]): EventBatch =>
  toBatch(records, parseValues(records), new Set());

/**
 * Reads a consumed batch: each record is parsed once, its sealed fields opened (one keyring
 * query for the batch), and checked against the contract; whatever is not an event becomes a
 * dead letter naming why.
 */
export async function decodeBatch(
  records: readonly ConsumedRecord[],
  sealer?: EventSealer,
): Promise<EventBatch> {
  if (!sealer) return decodeRecords(records);
  const values = parseValues(records);
  return toBatch(records, values, await sealer.open(values));
}

/** The records of events: key = emailId, or the domain id (each one's events keep their order), value = JSON. */
export const encodeRecords = (
  events: readonly LogEvent[],
  values: readonly unknown[] = events,
): EventLogRecord[] => events.map((e, i) => ({ key: logEventKey(e), value: JSON.stringify(values[i]) }));

/** The records of events, their personal fields sealed when a `sealer` is given. */
export async function encodeEvents(
  events: readonly LogEvent[],
  sealer?: EventSealer,
): Promise<EventLogRecord[]> {
  return encodeRecords(events, sealer ? await sealer.seal(events) : events);
}

/** The last offset of each partition in `records` (offsets ascend within a partition). */
function lastOffsets(records: readonly ConsumedRecord[]): Map<number, string> {
  const last = new Map<number, string>();
  for (const r of records) last.set(r.partition, r.offset);
  return last;
}

/**
 * Whether a reader standing at `positions` (the last offset handled per partition) has read every
 * record within `spans` (a snapshot of `EventLog.spans`).
 */
export function hasReached(positions: ReadonlyMap<number, string>, spans: readonly PartitionSpan[]): boolean {
  return spans.every((s) => {
    if (BigInt(s.high) <= BigInt(s.low)) return true; // nothing held
    const at = positions.get(s.partition);
    return at !== undefined && BigInt(at) >= BigInt(s.high) - 1n;
  });
}

/** The typed stream over a log of records; with a `sealer`, personal fields are sealed on the way in and opened on the way out. */
export function createEventStream(log: EventLog, opts: { sealer?: EventSealer } = {}): EventStream {
  const { sealer } = opts;
  return {
    async append(events) {
      if (events.length === 0) return;
      await log.append(await encodeEvents(events, sealer));
    },
    partitionsOf: (keys) => log.partitionsOf(keys),
    consume({ handle, ...rest }) {
      return log.consume({
        ...rest,
        handle: async (records) =>
          handle({ ...(await decodeBatch(records, sealer)), positions: lastOffsets(records) }),
      });
    },
    lag: (group) => log.lag(group),
    spans: () => log.spans(),
    ping: () => log.ping(),
    close: () => log.close(),
  };
}

/**
 * Read-your-writes (SPEC §25): the `position` of a write of `events` (id, and log key as
 * `logEventKey` gives it, in append order) — its last event on each partition it went to,
 * partitions ascending (`formatPosition`). One event, or one partition: that last event's id.
 * Known before the append (a send plans its answer first); the append puts each key where
 * `partitionsOf` says.
 */
export async function positionOfWrite(
  log: Pick<EventStream, 'partitionsOf'>,
  events: readonly { id: string; key: string }[],
): Promise<string> {
  if (events.length === 0) throw new Error('a write has at least one event');
  if (events.length === 1) return events[0]!.id;
  const partitions = await log.partitionsOf(events.map((e) => e.key));
  const lastOn = new Map<number, string>();
  for (const [i, e] of events.entries()) lastOn.set(partitions[i]!, e.id);
  return formatPosition([...lastOn].sort(([a], [b]) => a - b).map(([, id]) => id));
}
