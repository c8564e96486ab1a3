import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaEventLog } from '../src/kafka.js';
import type { KafkaEventLogOptions } from '../src/kafka-options.js';
import { kafkajs } from '../src/kafkajs-module.js';
import { EventLogUnavailableError } from '../src/port.js';
import { runEventLogContract } from './event-log.contract.js';
import { collect, makeRecords, randomSuffix, waitFor } from './helpers.js';

const { Kafka, logLevel, Partitioners } = kafkajs();

const require = createRequire(import.meta.url);
const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const admin = new Kafka({ clientId: 'event-log-test', brokers, logLevel: logLevel.NOTHING }).admin();
const quiet = { info() {}, warn() {}, error() {} };
// The global setup deletes this run's topics by this prefix, should a cleanup be missed.
const topicPrefix = process.env.TERN_TEST_TOPIC_PREFIX ?? '';
const freshTopic = () => `${topicPrefix}event-log-test-${randomSuffix()}`;
/** Deletes a test's topic (a failure is left to the global teardown's sweep by prefix). */
const deleteTopic = (topic: string) => admin.deleteTopics({ topics: [topic] }).catch(() => {});
/** A test's cleanup: closes the logs it opened, in this order, then deletes its topic. */
async function cleanUp(topic: string, ...logs: { close(): Promise<unknown> }[]): Promise<void> {
  for (const log of logs) await log.close();
  await deleteTopic(topic);
}
/** A log of `topic` on the test's brokers, quiet, with `options`. */
const openLog = (topic: string, options: Partial<KafkaEventLogOptions> = {}) =>
  createKafkaEventLog({ brokers, topic, logger: quiet, ...options });

beforeAll(async () => {
  await admin.connect();
});

afterAll(async () => {
  await admin.disconnect();
});

runEventLogContract('kafka', async () => {
  const topic = freshTopic();
  const log = openLog(topic, { partitions: 3, clientId: 'event-log-test' });
  return {
    log,
    cleanup: () => cleanUp(topic, log),
  };
});

describe('Kafka event log specifics', () => {
  it('rejects append with EventLogUnavailableError within seconds when no broker listens', async () => {
    // A port nothing listens on (the discard port on loopback).
    const log = createKafkaEventLog({ brokers: ['127.0.0.1:9'], topic: 'unreachable', logger: quiet });
    try {
      const t0 = Date.now();
      await expect(log.append([{ key: 'k', value: 'v' }])).rejects.toBeInstanceOf(EventLogUnavailableError);
      expect(Date.now() - t0).toBeLessThan(10_000);
      await expect(log.ping()).rejects.toBeInstanceOf(EventLogUnavailableError);
    } finally {
      await log.close();
    }
  });

  it('partitionsOf is where a plain kafkajs producer puts each key: keys stay where they were', async () => {
    const topic = freshTopic();
    const log = openLog(topic, { partitions: 5, clientId: 'event-log-test' });
    const producer = new Kafka({ clientId: 'event-log-test', brokers, logLevel: logLevel.NOTHING }).producer({
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    try {
      await log.ping(); // creates the topic
      await producer.connect();
      const records = makeRecords('plain', 50, 50);
      // Appended without a partition: kafkajs's own choice, as the log appended before partitionsOf.
      const sent = await Promise.all(
        records.map((r) => producer.send({ topic, acks: -1, messages: [{ key: r.key, value: r.value }] })),
      );
      const chosen = sent.map((meta) => meta[0]!.partition);
      expect(new Set(chosen).size).toBeGreaterThan(1);
      expect(await log.partitionsOf(records.map((r) => r.key))).toEqual(chosen);
    } finally {
      await producer.disconnect();
      await cleanUp(topic, log);
    }
  });

  it('creates the topic with the requested partitions, and reuses an existing one without logging an error', async () => {
    const topic = freshTopic();
    // Every start after the first finds the topic there: an expected state, not an error line.
    const errors: string[] = [];
    const recording = {
      info() {},
      warn() {},
      error: (_obj: object, msg?: string) => void errors.push(msg ?? ''),
    };
    const first = createKafkaEventLog({ brokers, topic, partitions: 4, logger: recording });
    const second = createKafkaEventLog({ brokers, topic, partitions: 8, logger: recording });
    try {
      await first.append([{ key: 'k', value: 'v1' }]);
      await second.append([{ key: 'k', value: 'v2' }]);
      const watermarks = await admin.fetchTopicOffsets(topic);
      expect(watermarks.length).toBe(4);
      expect(await first.lag('nobody')).toBe(2);
      expect(errors).toEqual([]);
    } finally {
      await cleanUp(topic, first, second);
    }
  });

  it('consumes everything with fetches bounded far below a batch, and refuses a bound below 1 byte', async () => {
    const topic = freshTopic();
    // A fetch brings at least one record batch whatever the bound: small bounds slow, never stall.
    const log = openLog(topic, { partitions: 3, fetchMaxBytesPerPartition: 1024, fetchMaxBytes: 2048 });
    const broken = openLog(topic, { fetchMaxBytes: 0 });
    try {
      const records = makeRecords('fetch', 300, 7);
      for (let i = 0; i < records.length; i += 50) await log.append(records.slice(i, i + 50));
      const c = await collect(log, { group: `g-${randomSuffix()}`, fromBeginning: true, maxBatchSize: 100 });
      await c.waitForRecords(records);
      await expect(
        broken.consume({ group: `g-${randomSuffix()}`, fromBeginning: true, async handle() {} }),
      ).rejects.toThrow(/fetch bytes/);
    } finally {
      await cleanUp(topic, broken, log);
    }
  });
  it("an idle log's broker connections are not polled every millisecond (kafkajs 2.2.4's RequestQueue timer, replaced)", async () => {
    const topic = freshTopic();
    const log = openLog(topic, { partitions: 3 });
    const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
      prototype: { checkPendingRequests(this: unknown): void };
    };
    const original = RequestQueue.prototype.checkPendingRequests;
    let checks = 0;
    RequestQueue.prototype.checkPendingRequests = function (this: unknown) {
      checks++;
      original.call(this);
    };
    try {
      // Records appended and consumed: the producer's, the consumer's and the coordinator's
      // connections have each had responses (the 1 ms loop started at a connection's first one).
      const records = makeRecords('idle', 30, 3);
      await log.append(records);
      const c = await collect(log, { group: `g-${randomSuffix()}`, fromBeginning: true });
      await c.waitForRecords(records);
      checks = 0;
      const started = performance.now();
      await new Promise((r) => setTimeout(r, 2000));
      const perSecond = checks / ((performance.now() - started) / 1000);
      // What remains: one check per response (the consumer's fetches, heartbeats). kafkajs's own
      // method checked each connection's empty queue ≈ 1 000 times a second.
      expect(perSecond).toBeLessThan(100);
    } finally {
      RequestQueue.prototype.checkPendingRequests = original;
      await cleanUp(topic, log);
    }
  });

  it('a consumer whose topic its broker does not know yet starts once it does, on a fresh kafkajs consumer', async () => {
    const topic = freshTopic();
    const log = openLog(topic, { partitions: 1 });
    const writer = openLog(topic, { partitions: 1 });
    try {
      await log.append([{ key: 'k', value: 'before' }]); // the log made the topic and knows it
      await admin.deleteTopics({ topics: [topic] });
      await waitFor('topic gone', async () => !(await admin.listTopics()).includes(topic));
      const seen: string[] = [];
      const started = log.consume({
        group: `g-${randomSuffix()}`,
        fromBeginning: true,
        async handle(batch) {
          for (const r of batch) seen.push(r.value);
        },
      });
      started.catch(() => {}); // awaited below; a rejection meanwhile is the failure shown there
      // Its subscription meets UNKNOWN_TOPIC_OR_PARTITION until the topic is made again.
      await new Promise((r) => setTimeout(r, 1_500));
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
      await writer.append([{ key: 'k', value: 'after' }]);
      const consumer = await started;
      await waitFor('the record', () => seen.includes('after'));
      await consumer.stop();
    } finally {
      await cleanUp(topic, writer, log);
    }
  });

  it('merges the batches of several partitions into one handler call, each partition in order, calls bounded', async () => {
    // Issue 45 item 2: one handler call (one projector transaction, one dispatcher statement) for
    // what a fetch brought from every partition, not one per partition.
    const topic = freshTopic();
    const log = openLog(topic, { partitions: 6, partitionConcurrency: 2 });
    let inFlight = 0;
    let maxInFlight = 0;
    try {
      const early = makeRecords('merge', 600, 40);
      await log.append(early); // every partition has records before the consumer's first fetch
      const c = await collect(log, {
        group: `g-${randomSuffix()}`,
        fromBeginning: true,
        maxBatchSize: 250,
        async handle() {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise((r) => setTimeout(r, 5));
          inFlight--;
        },
      });
      const late = makeRecords('merge-late', 400, 40);
      await Promise.all([0, 100, 200, 300].map((i) => log.append(late.slice(i, i + 100))));
      await c.waitForRecords([...early, ...late]);
      const partitionsPerCall = c.batches.map((b) => new Set(b.map((r) => r.partition)).size);
      expect(Math.max(...partitionsPerCall)).toBeGreaterThan(1);
      expect(Math.max(...c.batches.map((b) => b.length))).toBeLessThanOrEqual(250);
      expect(maxInFlight).toBeLessThanOrEqual(2);
      // Each partition's offsets arrive in order, each once.
      const lastOffset = new Map<number, bigint>();
      for (const r of c.records) {
        const previous = lastOffset.get(r.partition) ?? -1n;
        expect(BigInt(r.offset)).toBeGreaterThan(previous);
        lastOffset.set(r.partition, BigInt(r.offset));
      }
      expect(c.records).toHaveLength(1000);
    } finally {
      await cleanUp(topic, log);
    }
  });
  it('a member dropped from its group while it handles a batch rejoins and goes on consuming', async () => {
    // kafkajs answers the dropped member's commit with a non-retriable UNKNOWN_MEMBER_ID /
    // ILLEGAL_GENERATION and stops that consumer for good: in a three-broker fault the dispatcher
    // stayed up and read nothing more (2 133 webhooks never made). A stops in its first batch while
    // B joins; the rebalance drops A after 3 s; B leaves; A must read what comes next.
    const topic = freshTopic();
    const group = `g-${randomSuffix()}`;
    const open = () => openLog(topic, { partitions: 1, sessionTimeoutMs: 6_000, rebalanceTimeoutMs: 3_000 });
    const [logA, logB] = [open(), open()];
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let first = true;
    try {
      await logA.ping();
      const a = await collect(logA, {
        group,
        fromBeginning: true,
        async handle() {
          if (!first) return;
          first = false;
          await released;
        },
      });
      const before = makeRecords('before', 1, 1);
      await logA.append(before);
      await waitFor('A in its first batch', () => !first);
      const b = await collect(logB, { group, fromBeginning: true });
      await new Promise((r) => setTimeout(r, 8_000)); // the rebalance without A completes
      release();
      await b.waitForRecords(before, 30_000);
      await b.consumer.stop();
      const after = makeRecords('after', 20, 1);
      await logA.append(after);
      await a.waitForRecords(after, 60_000);
    } finally {
      release();
      await cleanUp(topic, logB, logA);
    }
  }, 120_000);
});
