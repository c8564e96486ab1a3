/** One record of the log. key = emailId (all events of an email keep their order), value = JSON event. */
export interface EventLogRecord {
  key: string;
  value: string;
}

/** A record as delivered to a consumer, with its position in the log. */
export interface ConsumedRecord extends EventLogRecord {
  partition: number;
  /** Position within the partition, a decimal integer (int64 in Kafka, the table sequence in Postgres). */
  offset: string;
}

export interface ConsumeOptions {
  /** Named consumer group: positions are committed per group. */
  group: string;
  /** Where a group without a committed position starts: the first record (true) or the end of the log (false, default). */
  fromBeginning?: boolean;
  /** Largest batch handed to `handle`. */
  maxBatchSize?: number;
  /** Longest wait for new records before looking again. */
  maxWaitMs?: number;
  /**
   * How long records that fill less than a batch may wait for more before they are handed over
   * (Kafka's fetch.min.bytes with this as the fetch's wait). Default 0: at once. For a handler
   * whose cost is per call whatever it carries, this trades that much latency for fuller calls.
   */
  lingerMs?: number;
  /** Resolve → the batch is committed. Throw → nothing is committed and the batch is delivered again (after a backoff). */
  handle(batch: ConsumedRecord[]): Promise<void>;
}

/** A partition's offsets (decimal integers): the first one held and the next one to be written. */
export interface PartitionSpan {
  partition: number;
  low: string;
  high: string;
}

export interface EventLogConsumer {
  /** Stops fetching, waits for the batch being handled, leaves the group. */
  stop(): Promise<void>;
}

export interface EventLog {
  /** Resolves once the log durably holds every record (Kafka acks=-1); rejects with EventLogUnavailableError when it cannot. */
  append(records: EventLogRecord[]): Promise<void>;
  /**
   * The partition `append` puts a record of each key on (one per key, in order): Kafka's default
   * partitioner over the topic's partitions, always 0 on the Postgres table. Read-your-writes
   * (SPEC §25) names a write by its last event per partition: each partition is folded in order.
   */
  partitionsOf(keys: readonly string[]): Promise<number[]>;
  consume(opts: ConsumeOptions): Promise<EventLogConsumer>;
  /** Records not yet committed by the group (a group that never committed counts the whole log). */
  lag(group: string): Promise<number>;
  /**
   * Each partition's span now: `low`, the first offset it still holds, `high`, the offset its next
   * record will take (Kafka's watermarks). A reader that has handled offset `high - 1` of every
   * partition with `high > low` has read every record appended before the call, however fast
   * records keep arriving (the reprojection's hand-over waits for exactly that).
   */
  spans(): Promise<PartitionSpan[]>;
  /** Readiness: rejects when the log cannot be reached. */
  ping(): Promise<void>;
  /** Stops every consumer this log started and releases connections. */
  close(): Promise<void>;
}

/** The log cannot take records right now (broker down, timeout): callers answer 503 and the client retries. */
export class EventLogUnavailableError extends Error {
  override readonly name = 'EventLogUnavailableError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** `ConsumeOptions.lingerMs`, checked: 0 unless set. */
export function lingerOf(opts: Pick<ConsumeOptions, 'lingerMs'>): number {
  const ms = opts.lingerMs ?? 0;
  if (!Number.isInteger(ms) || ms < 0) throw new Error('lingerMs must be an integer ≥ 0');
  return ms;
}
