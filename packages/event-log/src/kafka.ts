import { backoffMs, createCoalescer, withTimeout } from '@tern/kernel';
import type { Admin, Consumer, EachBatchPayload, Producer } from 'kafkajs';
import { rethrowCause, toKafkaLogCreator } from './kafka-client.js';
import { fetchSizes, type KafkaEventLogOptions } from './kafka-options.js';
import { keyPartitioner } from './kafka-partition.js';
import { sendEvery } from './kafka-send.js';
import { ensureTopic } from './kafka-topic.js';
import { kafkajs } from './kafkajs-module.js';
import type { ConsumedRecord, ConsumeOptions, EventLog, EventLogConsumer } from './port.js';
import { EventLogUnavailableError, lingerOf } from './port.js';
import { createWakeSignal } from './wait.js';

const DEFAULT_BATCH = 1000;
const DEFAULT_SESSION_TIMEOUT_MS = 10_000;
// The broker's "no committed offset" marker in OffsetFetch.
const NO_OFFSET = '-1';

export function createKafkaEventLog(options: KafkaEventLogOptions): EventLog {
  const { topic, logger } = options;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const { Kafka, logLevel, Partitioners } = kafkajs();
  const kafka = new Kafka({
    clientId: options.clientId ?? 'tern',
    brokers: options.brokers,
    // Bounded so an unreachable broker surfaces as an error within seconds instead of a hang.
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    logLevel: logger ? logLevel.WARN : logLevel.ERROR,
    ...(logger ? { logCreator: toKafkaLogCreator(logger) } : {}),
  });
  const admin: Admin = kafka.admin();
  const producer: Producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
    idempotent: options.idempotent ?? false,
    // Several requests in flight per broker. A retried request may then land after a later one,
    // reordering records of one key: harmless, the fold is order-independent (SPEC §5: any
    // permutation of an email's events gives the same entry) and duplicates are dropped by event
    // id. Measured 14.7–15.6 → 10.9–12.8 µs of producer CPU per record (bench/README.md). The
    // idempotent producer keeps one, as its sequence numbers require.
    maxInFlightRequests: options.idempotent ? 1 : 5,
    ...(options.idempotent ? {} : { retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 } }),
  });
  const consumers = new Set<{ stop(): Promise<void> }>();
  let ready: Promise<void> | null = null;
  let closed = false;
  // The partition of each key, read once per process at start (`keyPartitioner`).
  let partitionOf: (key: string) => number = () => {
    throw new Error('kafka event log not initialised');
  };
  let partitionCount = 0;

  function init(): Promise<void> {
    ready ??= (async () => {
      await admin.connect();
      await ensureTopic(admin, topic, options.partitions ?? 6, options.replicationFactor);
      const [meta] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      partitionCount = meta?.partitions.length ?? 0;
      partitionOf = keyPartitioner(topic, partitionCount);
      await producer.connect();
    })().catch((error: unknown) => {
      ready = null; // the next call tries again
      throw error;
    });
    return ready;
  }

  async function unavailable<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await withTimeout(
        work(),
        timeoutMs,
        () => new EventLogUnavailableError(`kafka ${what} timed out after ${timeoutMs} ms`),
      );
    } catch (error) {
      if (error instanceof EventLogUnavailableError) throw error;
      throw new EventLogUnavailableError(`kafka ${what} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  // For a group with nothing committed, the end of each partition now. kafkajs would resolve
  // "latest" only at its first fetch after joining, skipping what is appended in between.
  async function endOffsetsOfUncommitted(group: string): Promise<Map<number, string>> {
    const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const missing = new Set(
      (committed?.partitions ?? []).filter((p) => p.offset === NO_OFFSET).map((p) => p.partition),
    );
    if (missing.size === 0) return new Map();
    const watermarks = await admin.fetchTopicOffsets(topic);
    return new Map(watermarks.filter((w) => missing.has(w.partition)).map((w) => [w.partition, w.high]));
  }

  // Coordinator requests are not retried by the kafkajs admin, and a broker that just started
  // answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a while.
  async function retrying<T>(work: () => Promise<T>, deadlineMs: number): Promise<T> {
    const deadline = Date.now() + deadlineMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        const waitMs = backoffMs(attempt, { maxMs: 1_000 });
        if (closed || Date.now() + waitMs > deadline) throw error;
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }

  async function consume(opts: ConsumeOptions): Promise<EventLogConsumer> {
    if (closed) throw new Error('event log is closed');
    const maxBatchSize = opts.maxBatchSize ?? DEFAULT_BATCH;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new Error('maxBatchSize must be ≥ 1');
    const fromBeginning = opts.fromBeginning ?? false;
    let startAt = await retrying(async () => {
      await init();
      return fromBeginning ? new Map<number, string>() : endOffsetsOfUncommitted(opts.group);
    }, 30_000);

    const fetchBytes = fetchSizes(options, maxBatchSize);
    const lingerMs = lingerOf(opts);
    const sessionTimeout = options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    const heartbeatInterval = Math.max(500, Math.floor(sessionTimeout / 10));
    const newConsumer = (): Consumer =>
      kafka.consumer({
        groupId: opts.group,
        allowAutoTopicCreation: false,
        maxWaitTimeInMs: opts.maxWaitMs ?? 500,
        ...(lingerMs > 0 ? { maxWaitTimeInMs: lingerMs, minBytes: maxBatchSize * 256 } : {}),
        maxBytesPerPartition: fetchBytes.perPartition,
        maxBytes: fetchBytes.total,
        sessionTimeout,
        heartbeatInterval,
        ...(options.rebalanceTimeoutMs ? { rebalanceTimeout: options.rebalanceTimeoutMs } : {}),
        // Longer than the client's: a consumer rides out a broker restart (kafkajs restarts it).
        retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5_000 },
      });
    let consumer = newConsumer();
    const signal = createWakeSignal();
    let stopped = false;
    let failures = 0;
    /**
     * A fetch's partitions in one handler call (issue 45 item 2): kafkajs hands them all at once;
     * chunks arriving while `partitionConcurrency` calls run merge into the next, ≤ `maxBatchSize`
     * records. Each partition stays in order (kafkajs awaits its batch); a failed call is made
     * again partition by partition, and only a chunk that fails alone seeks back.
     */
    const handleMerged = createCoalescer<ConsumedRecord[]>(
      (chunks) => opts.handle(chunks.flat()),
      maxBatchSize,
      {
        concurrency: options.partitionConcurrency ?? 1,
        weight: (chunk) => chunk.length,
        retryAlone: true, // so one partition's failing batch holds back no other
      },
    );
    // Per partition, the first offset not committed yet by this member: where a replacement
    // consumer starts a partition the group never committed (kafkajs's own fallback is "latest").
    const reached = new Map<number, string>();

    async function eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload) {
      const { partition } = batch;
      const records: ConsumedRecord[] = batch.messages.map((m) => ({
        key: m.key?.toString() ?? '',
        value: m.value?.toString() ?? '',
        partition,
        offset: m.offset,
      }));
      for (let i = 0; i < records.length; i += maxBatchSize) {
        if (stopped || !isRunning() || isStale()) return;
        const chunk = records.slice(i, i + maxBatchSize);
        const first = chunk[0]!;
        const last = chunk.at(-1)!;
        // A slow handler must not look like a dead member and trigger a rebalance.
        const beat = setInterval(() => void heartbeat().catch(() => {}), heartbeatInterval);
        try {
          await handleMerged(chunk);
        } catch (error) {
          failures++;
          logger?.warn(
            { err: error, group: opts.group, partition, attempt: failures },
            'event log batch failed; redelivering',
          );
          // Not committed; fetch again from the chunk's first record after a pause.
          consumer.seek({ topic, partition, offset: first.offset });
          await signal.wait(backoffMs(failures));
          return;
        } finally {
          clearInterval(beat);
        }
        failures = 0;
        const next = (BigInt(last.offset) + 1n).toString();
        // A commit the group refuses (this member was fenced: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)
        // comes back wrapped as non-retriable, and kafkajs stops a consumer for good on that (seen
        // under a broker fault: the dispatcher consumed nothing more). Unwrapped, kafkajs's runner
        // rejoins the group; the batch is read again, and handlers are idempotent by event id.
        await consumer.commitOffsets([{ topic, partition, offset: next }]).catch(rethrowCause);
        reached.set(partition, next);
        resolveOffset(last.offset);
        await heartbeat(); // not through kafkajs's retrier: its errors reach the runner as they are
      }
    }

    // Seeks are applied before the first fetch, at the first join of each consumer (a replacement's
    // too): later assignments of a never-committed partition fall back to kafkajs's own "latest".
    async function run(): Promise<void> {
      const c = consumer;
      c.on(c.events.GROUP_JOIN, ({ payload }) => {
        for (const partition of payload.memberAssignment[topic] ?? []) {
          const offset = startAt.get(partition);
          if (offset === undefined) continue;
          c.seek({ topic, partition, offset });
          if (!reached.has(partition)) reached.set(partition, offset);
        }
        startAt = new Map();
      });
      // kafkajs restarts a consumer after a retriable error only; after any other it has left the
      // group and stays stopped. Replace it, so that a role never sits alive and reading nothing.
      c.on(c.events.CRASH, ({ payload }) => {
        if (payload.restart || stopped) return;
        logger?.error({ err: payload.error, group: opts.group }, 'event log consumer stopped; replacing it');
        void (async () => {
          for (let attempt = 1; !stopped; attempt++) {
            await signal.wait(backoffMs(attempt, { maxMs: 5_000 }));
            if (stopped) return;
            try {
              await c.disconnect().catch(() => {});
              const ends = await endOffsetsOfUncommitted(opts.group);
              startAt = new Map([...ends].map(([p, end]) => [p, reached.get(p) ?? end]));
              consumer = newConsumer();
              await run();
              if (stopped) await consumer.disconnect(); // stop() may have disconnected the old one
              return;
            } catch (error) {
              logger?.warn({ err: error, group: opts.group, attempt }, 'event log consumer not replaced yet');
            }
          }
        })();
      });
      await c.connect();
      try {
        await c.subscribe({ topics: [topic], fromBeginning });
        await c.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          // Every partition of a fetch at once; `handleMerged` bounds the handler calls.
          partitionsConsumedConcurrently: Math.max(options.partitionConcurrency ?? 1, partitionCount),
          eachBatch,
        });
      } catch (error) {
        await c.disconnect().catch(() => {});
        throw error;
      }
    }
    // A topic just made may be unknown yet to the broker answering the subscription's metadata
    // (UNKNOWN_TOPIC_OR_PARTITION, kafkajs#815, seen at a cluster's first start): try anew.
    let attempts = 0;
    await retrying(async () => {
      if (attempts++ > 0) consumer = newConsumer(); // run() disconnected the last one
      await run();
    }, 30_000);

    let stopping: Promise<void> | null = null;
    const handle = {
      stop(): Promise<void> {
        stopping ??= (async () => {
          stopped = true;
          signal.wake();
          // Waits for the batch in hand, then leaves the group so others take its partitions now.
          await consumer.disconnect();
          consumers.delete(handle);
        })();
        return stopping;
      },
    };
    consumers.add(handle);
    return handle;
  }

  return {
    async append(records) {
      if (records.length === 0) return;
      await unavailable('append', async () => {
        await init();
        // The partition `partitionsOf` names, so a write's position names where it landed.
        const messages = records.map((r) => ({ key: r.key, value: r.value, partition: partitionOf(r.key) }));
        // Not producer.send alone: it can resolve without some partitions' records (kafka-send.ts).
        await sendEvery(producer, messages, {
          topic,
          timeoutMs,
          deadline: Date.now() + timeoutMs,
          onResend: (partitions, count) =>
            logger?.warn(
              { topic, partitions, records: count },
              'kafka produce resolved short; sending again',
            ),
        });
      });
    },

    async partitionsOf(keys) {
      await unavailable('partitionsOf', init);
      return keys.map(partitionOf);
    },

    consume,

    async lag(group) {
      const [[committed], watermarks] = await retrying(async () => {
        await init();
        return Promise.all([
          admin.fetchOffsets({ groupId: group, topics: [topic] }),
          admin.fetchTopicOffsets(topic),
        ]);
      }, 10_000);
      const byPartition = new Map((committed?.partitions ?? []).map((p) => [p.partition, p.offset]));
      let lag = 0n;
      for (const w of watermarks) {
        const offset = byPartition.get(w.partition) ?? NO_OFFSET;
        const from = offset === NO_OFFSET ? BigInt(w.low) : BigInt(offset);
        const behind = BigInt(w.high) - from;
        if (behind > 0n) lag += behind;
      }
      return Number(lag);
    },

    async spans() {
      const watermarks = await retrying(async () => {
        await init();
        return admin.fetchTopicOffsets(topic);
      }, 10_000);
      return watermarks.map((w) => ({ partition: w.partition, low: w.low, high: w.high }));
    },

    async ping() {
      await unavailable('ping', async () => {
        await init();
        await admin.fetchTopicMetadata({ topics: [topic] });
      });
    },

    async close() {
      closed = true;
      await Promise.all([...consumers].map((c) => c.stop()));
      await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
      ready = null;
    },
  };
}
