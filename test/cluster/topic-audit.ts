import { randomBytes } from 'node:crypto';
import { kafkajs } from '@tern/event-log';
import type pg from 'pg';

const { Kafka, logLevel } = kafkajs();

/**
 * Where acknowledged events went (issue 46): the whole topic read back with a plain kafkajs
 * consumer of a group of its own, from the beginning, and its event ids compared with the ids a
 * client got 2xx for and with the ids the projector folded (`email_events`). An id acknowledged
 * and not in the topic was lost on the producer/broker side; one in the topic and not folded, on
 * the consumer side.
 */

export interface TopicRecord {
  partition: number;
  offset: string;
  value: string;
}

/** Every record of `topic` up to its end offsets of now (bounded by `timeoutMs`). */
export async function readTopic(
  brokers: string[],
  topic: string,
  timeoutMs = 180_000,
): Promise<TopicRecord[]> {
  const kafka = new Kafka({ brokers, clientId: 'topic-audit', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    ends = new Map(
      offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high)]),
    );
  } finally {
    await admin.disconnect();
  }
  const records: TopicRecord[] = [];
  const next = new Map<number, bigint>();
  const done = () => [...ends].every(([p, end]) => (next.get(p) ?? 0n) >= end);
  if (done()) return records;
  const consumer = kafka.consumer({ groupId: `topic-audit-${randomBytes(4).toString('hex')}` });
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((r) => {
    finish = r;
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          records.push({ partition: batch.partition, offset: m.offset, value: m.value?.toString() ?? '' });
          next.set(batch.partition, BigInt(m.offset) + 1n);
        }
        if (done()) finish();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      finished,
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`reading ${topic} back took over ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    await consumer.disconnect();
  }
  return records;
}

export interface Audit {
  acked: number;
  /** Acknowledged ids found in the topic. */
  inTopic: number;
  /** Acknowledged ids not in the topic: lost by the producer or the brokers. */
  missingFromTopic: number;
  /** Records of acknowledged ids beyond the first (a retried append): harmless. */
  duplicatesInTopic: number;
  /** Acknowledged ids in the topic that the projector did not fold (when `folded` is given). */
  notFolded: number;
  /** A few of the missing ids. */
  examples: string[];
}

/**
 * `acked` and `folded` are ids as `keyOf` makes them from a record's parsed value; records whose
 * value gives no key (not JSON, another writer's) are left out.
 */
export function audit(opts: {
  records: TopicRecord[];
  acked: Iterable<string>;
  keyOf: (value: unknown) => string | undefined;
  folded?: ReadonlySet<string>;
}): Audit {
  const seen = new Map<string, number>();
  for (const r of opts.records) {
    let key: string | undefined;
    try {
      key = opts.keyOf(JSON.parse(r.value));
    } catch {
      key = undefined;
    }
    if (key !== undefined) seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const acked = new Set(opts.acked);
  const result: Audit = {
    acked: acked.size,
    inTopic: 0,
    missingFromTopic: 0,
    duplicatesInTopic: 0,
    notFolded: 0,
    examples: [],
  };
  for (const id of acked) {
    const n = seen.get(id) ?? 0;
    if (n === 0) {
      result.missingFromTopic++;
      if (result.examples.length < 5) result.examples.push(id);
      continue;
    }
    result.inTopic++;
    result.duplicatesInTopic += n - 1;
    if (opts.folded && !opts.folded.has(id)) result.notFolded++;
  }
  return result;
}

/** A Tern event's audit key: tenant and event id. */
export const eventKey = (value: unknown): string | undefined => {
  const e = value as { tenantId?: unknown; id?: unknown } | null;
  return typeof e?.tenantId === 'string' && typeof e.id === 'string' ? `${e.tenantId}|${e.id}` : undefined;
};

/** The events of `tenants` the projector folded (each event's timeline row is its claim). */
export async function foldedEvents(pool: pg.Pool, tenants: string[]): Promise<Set<string>> {
  const { rows } = await pool.query<{ tenant_id: string; event_id: string }>(
    'SELECT tenant_id, event_id FROM email_events WHERE tenant_id = ANY($1)',
    [tenants],
  );
  return new Set(rows.map((r) => `${r.tenant_id}|${r.event_id}`));
}

export const formatAudit = (a: Audit): string =>
  `acked=${a.acked} inTopic=${a.inTopic} missingFromTopic=${a.missingFromTopic} duplicatesInTopic=${a.duplicatesInTopic} notFolded=${a.notFolded}${a.examples.length ? ` e.g. ${a.examples.join(' ')}` : ''}`;
