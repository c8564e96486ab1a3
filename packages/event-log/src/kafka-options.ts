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
   * Partitions a consumer handles at once (kafkajs partitionsConsumedConcurrently). Default 1.
   * Each partition's batches stay in order; handlers of different partitions run side by side.
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
