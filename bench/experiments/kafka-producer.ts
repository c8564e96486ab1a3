/**
 * kafkajs producer settings, outside Tern's adapter: records/s and CPU µs per record for
 * maxInFlightRequests 1 vs 5 and the DefaultPartitioner vs an explicit partition, 4 sends in
 * flight of 1000 realistic records. Backs the ingest proposal in bench/README.md.
 *   npx tsx bench/experiments/kafka-producer.ts
 */
import { encodeRecords, kafkajs } from '@tern/event-log';
import { chunks, generateTraffic } from '../lib/events.js';
import { benchEnv, deleteTopic, runTag } from '../lib/services.js';

const { Kafka, logLevel, Partitioners } = kafkajs();

const { kafkaBrokers: brokers } = benchEnv(process.env);
const EVENTS = 100_000;
const topic = `tern-bench.producer-${runTag()}`;
const kafka = new Kafka({ brokers, logLevel: logLevel.ERROR });
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({
  waitForLeaders: true,
  topics: [{ topic, numPartitions: 6, replicationFactor: 1 }],
});
const records = encodeRecords(generateTraffic({ events: EVENTS, tag: 'producer', endMs: Date.now() }));
try {
  // Round 0 warms the JIT and is not printed; rounds 1 and 2 show the spread.
  for (const round of [0, 1, 2]) {
    for (const inFlight of [1, 5]) {
      for (const explicit of [false, true]) {
        const producer = kafka.producer({
          createPartitioner: Partitioners.DefaultPartitioner,
          maxInFlightRequests: inFlight,
          allowAutoTopicCreation: false,
        });
        await producer.connect();
        await producer.send({ topic, acks: -1, messages: [{ key: 'warm', value: 'up' }] });
        // An explicit partition skips the partitioner's per-message murmur2 (any stable key hash would do).
        const batches = chunks(
          records.map((r, i) => (explicit ? { ...r, partition: i % 6 } : r)),
          1000,
        );
        const cpu0 = process.cpuUsage();
        const started = performance.now();
        let next = 0;
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            while (next < batches.length)
              await producer.send({ topic, acks: -1, messages: batches[next++]! });
          }),
        );
        const ms = performance.now() - started;
        const cpu = process.cpuUsage(cpu0);
        if (round > 0)
          console.log(
            `round ${round}: maxInFlightRequests ${inFlight}, ${explicit ? 'explicit partition' : 'DefaultPartitioner'}: ` +
              `${Math.round((EVENTS / ms) * 1000)} records/s, ${((cpu.user + cpu.system) / EVENTS).toFixed(1)} µs CPU per record`,
          );
        await producer.disconnect();
      }
    }
  }
} finally {
  await admin.disconnect();
  await deleteTopic(brokers, topic);
}
