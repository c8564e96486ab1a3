import type { Logger } from '@tern/kernel';

/** How `createKafkaEventLog` reaches its cluster, sizes its topic and consumes (docs/deploy.md). */
export interface KafkaEventLogOptions {
  brokers: string[];
  topic: string;
  /** Partitions of the topic when this log creates it. Default 6. */
  partitions?: number;
  /**
   * Replication factor of the topic when this log creates it. Default: 3 when the cluster has 3
   * brokers or more (then with min.insync.replicas=2, so an acknowledged record is on two brokers
   * and one broker may be lost), else the number of brokers (1 for a single broker).
   */
  replicationFactor?: number;
  clientId?: string;
  /** Receives kafkajs warnings and errors; without it kafkajs prints errors only. */
  logger?: Logger;
  /** `append`/`ping` reject with EventLogUnavailableError after this long. Default 5 s. */
  timeoutMs?: number;
  /**
   * kafkajs idempotent producer. Off by default: per-key order already holds with one request in
   * flight, duplicates are harmless downstream (event ids), and a kafkajs idempotent producer
   * whose request timed out can be left with sequence numbers the broker rejects for good. It
   * does not prevent kafkajs's short sends either (same code path): `sendEvery` does.
   */
  idempotent?: boolean;
  /**
   * Handler calls a consumer runs at once. Default 1. Each partition's batches stay in order;
   * the batches of the partitions a fetch brought are merged into as few calls as this allows
   * (up to the consumer's maxBatchSize records a call), and calls run side by side.
   */
  partitionConcurrency?: number;
  /**
   * Bytes one consumer fetch may bring per partition (kafkajs maxBytesPerPartition). Default
   * 1 KiB per record of the consumer's maxBatchSize, at least 1 MiB, so a fetch is not cut below
   * a full batch (bench/README.md).
   */
  fetchMaxBytesPerPartition?: number;
  /**
   * Bytes one consumer fetch may bring in all partitions (kafkajs maxBytes). A consumer holds one
   * fetch's records at a time. Default 4 partitions' bytes, at least 10 MiB: a fetch lists the
   * partitions in the same order each time, so a lower bound lets the first ones' backlog hold
   * back the others'.
   */
  fetchMaxBytes?: number;
  /**
   * How long the group waits for a member that stopped heartbeating (kafkajs sessionTimeout;
   * at least the broker's group.min.session.timeout.ms, 6 s by default). Default 10 s (issue 49,
   * item 4): a member killed with `kill -9` leaves no LeaveGroup, so its restarted self (kafkajs
   * has no static membership) and the others wait this long for its partitions. Heartbeats go
   * every tenth of it, from the fetch loop and every so often while a batch is handled.
   */
  sessionTimeoutMs?: number;
  /**
   * How long a rebalance waits for every member to rejoin (kafkajs rebalanceTimeout, default its
   * 60 s). A member that is still handling a batch then is dropped from the group: its commit is
   * refused, it rejoins, and the batch is read again.
   */
  rebalanceTimeoutMs?: number;
}

const MIB = 1_048_576;

/**
 * A consumer's fetch bounds. kafkajs fetches 1 MiB per partition by default, which cut batches at
 * ~3 300 records whatever maxBatchSize said (bench/README.md); ~1 KiB per record leaves room for it.
 */
export function fetchSizes(
  options: Pick<KafkaEventLogOptions, 'fetchMaxBytesPerPartition' | 'fetchMaxBytes'>,
  maxBatchSize: number,
): { perPartition: number; total: number } {
  const perPartition = options.fetchMaxBytesPerPartition ?? Math.max(MIB, maxBatchSize * 1024);
  const total = options.fetchMaxBytes ?? Math.max(10 * MIB, perPartition * 4);
  for (const [name, n] of Object.entries({ perPartition, total }))
    if (!Number.isInteger(n) || n < 1) throw new Error(`kafka fetch bytes (${name}) must be ≥ 1`);
  return { perPartition, total };
}
