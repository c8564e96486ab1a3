import type { Message, Producer, RecordMetadata } from 'kafkajs';

/** A record for the partition the log picked for its key. */
export type PartitionedMessage = Message & { partition: number };

export interface SendEveryOptions {
  topic: string;
  /** The broker's wait for the in-sync replicas (the ProduceRequest's timeout). */
  timeoutMs: number;
  /** No new send after this time (epoch ms): the caller has answered "unavailable" by then. */
  deadline: number;
  /** Told of each partition set sent again, and how many records that is. */
  onResend?: (partitions: number[], records: number) => void;
}

/** Sends of one append at most: the first, then a resend per leadership move it ran into. */
const MAX_SENDS = 5;

/**
 * `producer.send` with acks=-1, resolved only once every partition of `messages` is in a produce
 * response with errorCode 0; the records of the partitions that are not are sent again.
 *
 * kafkajs 2.2.4 resolves `send` without having written some of its records when a partition's
 * leadership moves while it retries (src/producer/sendMessages.js, tulios/kafkajs#1303 and #1798):
 * it keeps each broker's response across its retries and, on the next attempt, sends only to the
 * brokers without one. A partition whose leadership moved to a broker that had already answered
 * (a controlled shutdown moves every leadership of the stopping broker, whose in-flight produce
 * then answers NOT_LEADER_OR_FOLLOWER; a restarted broker that leads nothing yet answers the same)
 * is never sent again, and `send` resolves with the other partitions' metadata only. The
 * idempotent producer goes through the same code. Issue 46: 91 acknowledged events lost with a
 * broker stopped under load (docs/deploy.md).
 *
 * A partition listed with errorCode 0 was in a request the broker answered after acks=-1: its
 * records are on the in-sync replicas. A resend may write some records twice (a partition that
 * moved from a broker that had answered to one that had not): consumers drop duplicates by
 * event id. Costs a set of partition numbers per append; no extra request unless kafkajs
 * resolved short.
 */
export async function sendEvery(
  producer: Pick<Producer, 'send'>,
  messages: readonly PartitionedMessage[],
  opts: SendEveryOptions,
): Promise<void> {
  let pending = messages;
  for (let sends = 1; ; sends++) {
    const answered: RecordMetadata[] = await producer.send({
      topic: opts.topic,
      acks: -1,
      timeout: opts.timeoutMs,
      messages: [...pending],
    });
    const written = new Set<number>();
    for (const r of answered) if (r.topicName === opts.topic && r.errorCode === 0) written.add(r.partition);
    pending = pending.filter((m) => !written.has(m.partition));
    if (pending.length === 0) return;
    const partitions = [...new Set(pending.map((m) => m.partition))].sort((a, b) => a - b);
    if (sends >= MAX_SENDS || Date.now() >= opts.deadline)
      throw new Error(
        `kafka produce resolved without partition(s) ${partitions.join(', ')} after ${sends} send(s)`,
      );
    opts.onResend?.(partitions, pending.length);
  }
}
