import { randomBytes } from 'node:crypto';
import { createKafkaEventLog, type EventLog, type EventLogRecord, kafkajs } from '@tern/event-log';
import type { Kafka as KafkaClient } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName, waitFor } from '../support/services.js';
import { type KafkaCluster, startKafkaCluster } from './kafka-cluster.js';
import { audit, formatAudit, readTopic } from './topic-audit.js';

const { Kafka, logLevel } = kafkajs();

/**
 * Issue 46 at the scale of the event log alone: `append` (createKafkaEventLog: acks=-1, RF 3,
 * min.insync.replicas=2) on the three-broker cluster while partition leaderships move, and every
 * append that resolved must have all its records in the topic, read back by a plain consumer.
 * kafkajs 2.2.4 resolved sends short when a leadership moved during its retries
 * (packages/event-log/src/kafka-send.ts):
 * 1. a producer whose metadata predates a broker's restart sends to it as a leader; it leads
 *    nothing yet and answers NOT_LEADER_OR_FOLLOWER, its partitions now led by brokers that
 *    answered the same send;
 * 2. appends under load while the leader of a partition is stopped (SIGTERM, a controlled
 *    shutdown) for APPEND_DOWN_S (10) s and started again.
 * Bounded: each case a few seconds of appends; the cluster's start and a node's restart (a JVM
 * each) take most of the time.
 */
const DOWN_S = Number(process.env.APPEND_DOWN_S ?? 10);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Kafka event log on three brokers: every resolved append is in the topic', () => {
  let cluster: KafkaCluster;
  let kafka: KafkaClient;
  const resends: string[] = [];
  const logger = {
    info() {},
    warn(obj: object, msg?: string) {
      if (msg?.includes('resolved short')) resends.push(JSON.stringify(obj));
    },
    error() {},
  };

  beforeAll(async () => {
    cluster = await startKafkaCluster();
    kafka = new Kafka({ brokers: cluster.brokers, clientId: 'append-test', logLevel: logLevel.NOTHING });
  }, 420_000);

  afterAll(async () => {
    await cluster?.destroy();
  }, 120_000);

  async function leaderOf(topic: string, partition: number): Promise<number> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      return topics[0]!.partitions.find((p) => p.partitionId === partition)!.leader;
    } finally {
      await admin.disconnect();
    }
  }

  async function fullIsr(topic: string): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await waitFor(
        async () => {
          const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
          return topics[0]!.partitions.every((p) => p.isr.length === 3);
        },
        { timeoutMs: 120_000, intervalMs: 500, description: `${topic}: 3 in-sync replicas` },
      );
    } finally {
      await admin.disconnect();
    }
  }

  const records = (n: number): EventLogRecord[] =>
    Array.from({ length: n }, () => {
      const id = randomBytes(8).toString('hex');
      return { key: `m-${id}`, value: JSON.stringify({ id }) };
    });
  // The first append creates the topic; its metadata reaches every broker a moment later.
  const firstAppend = (log: EventLog, batch: EventLogRecord[]) =>
    waitFor(() => log.append(batch).then(() => true), {
      timeoutMs: 60_000,
      intervalMs: 500,
      description: 'the first append',
    });
  const idOf = (r: EventLogRecord) => (JSON.parse(r.value) as { id: string }).id;
  const keyOf = (value: unknown) => (value as { id?: string } | null)?.id;

  async function check(log: EventLog, topic: string, acked: string[], name: string, resendsBefore: number) {
    await log.close();
    const found = audit({ records: await readTopic(cluster.brokers, topic), acked, keyOf });
    console.log(`[append] ${name}: ${formatAudit(found)} resends=${resends.length - resendsBefore}`);
    expect(found.acked).toBe(acked.length);
    expect(found.missingFromTopic, `${name}: acknowledged records missing from the topic`).toBe(0);
  }

  it('a restarted broker that leads nothing yet answers a producer with stale metadata', async () => {
    const topic = uniqueName('append-restart');
    const log = createKafkaEventLog({ brokers: cluster.brokers, topic, partitions: 6, logger });
    const resendsBefore = resends.length;
    const acked: string[] = [];
    const warm = records(60);
    await firstAppend(log, warm);
    acked.push(...warm.map(idOf));
    // The producer's metadata now names this node as a leader; it is not refreshed while idle.
    const node = await leaderOf(topic, 0);
    await cluster.stop(node);
    await cluster.start(node);
    await sleep(2_000);
    // Several appends at once: each its own produce, each meeting the stale leadership.
    const batches = Array.from({ length: 4 }, () => records(150));
    const results = await Promise.allSettled(batches.map((b) => log.append(b)));
    for (const [i, r] of results.entries())
      if (r.status === 'fulfilled') acked.push(...batches[i]!.map(idOf));
    console.log(
      `[append] restart: node ${node} stopped and started; appends ${results.map((r) => r.status).join(',')}`,
    );
    await check(log, topic, acked, `node ${node} restarted, stale producer`, resendsBefore);
    await fullIsr(topic);
  }, 300_000);

  it(`appends under load while a leader is stopped for ${DOWN_S} s and started again`, async () => {
    const topic = uniqueName('append-stop');
    const log = createKafkaEventLog({ brokers: cluster.brokers, topic, partitions: 6, logger });
    await firstAppend(log, records(6));
    const resendsBefore = resends.length;
    const acked: string[] = [];
    let failed = 0;
    let stopping = false;
    const appender = async () => {
      while (!stopping) {
        const batch = records(100);
        try {
          await log.append(batch);
          acked.push(...batch.map(idOf));
        } catch {
          failed++; // unavailable: a client retries with the same ids; here, new ones
          await sleep(250);
        }
      }
    };
    const appenders = Array.from({ length: 4 }, appender);
    await sleep(3_000);
    const node = await leaderOf(topic, 1);
    await cluster.stop(node);
    await sleep(DOWN_S * 1000);
    await cluster.start(node);
    await sleep(5_000);
    stopping = true;
    await Promise.all(appenders);
    console.log(`[append] stop: node ${node} stopped ${DOWN_S} s; appends failed=${failed}`);
    await check(log, topic, acked, `node ${node} stopped ${DOWN_S} s under load`, resendsBefore);
  }, 300_000);
});
