/**
 * Prints append latency and throughput of each adapter (figures, not assertions).
 *   npx tsx packages/event-log/test/append-throughput.bench.ts [kafka|postgres|pglite]...
 * Env: KAFKA_BROKERS (default 127.0.0.1:9092), DATABASE_URL (default local server).
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
import { createKafkaEventLog } from '../src/kafka.js';
import { kafkajs } from '../src/kafkajs-module.js';
import type { EventLog, EventLogRecord } from '../src/port.js';
import { createPostgresEventLog } from '../src/postgres.js';
import { randomSuffix, serverPool } from './helpers.js';

const { Kafka, logLevel } = kafkajs();

const APPENDS = 10;
const RECORDS = 1000;

function batch(n: number): EventLogRecord[] {
  return Array.from({ length: RECORDS }, (_, i) => {
    const emailId = `em_${n}_${i % 200}`;
    // About the size of a real delivery event.
    const value = JSON.stringify({
      id: `ev_${n}_${i}`,
      type: 'email.delivered',
      tenantId: 'tenant_bench',
      emailId,
      occurredAt: new Date(1_700_000_000_000 + i).toISOString(),
      data: { provider: 'ses', messageId: `msg-${n}-${i}` },
    });
    return { key: emailId, value };
  });
}

async function measure(name: string, log: EventLog): Promise<void> {
  await log.append([{ key: 'warm', value: 'up' }]); // connect, create topic/table
  const batches = Array.from({ length: APPENDS }, (_, n) => batch(n));
  const latencies: number[] = [];
  const t0 = performance.now();
  for (const b of batches) {
    const t = performance.now();
    await log.append(b);
    latencies.push(performance.now() - t);
  }
  const sequentialMs = performance.now() - t0;
  const t1 = performance.now();
  await Promise.all(batches.map((b) => log.append(b)));
  const concurrentMs = performance.now() - t1;
  latencies.sort((a, b) => a - b);
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const rate = (total: number, elapsed: number) => `${Math.round((total / elapsed) * 1000)} records/s`;
  console.log(
    `${name}: ${APPENDS} sequential appends of ${RECORDS}: p50 ${ms(latencies[Math.floor(APPENDS / 2)]!)}, ` +
      `max ${ms(latencies.at(-1)!)}, ${rate(APPENDS * RECORDS, sequentialMs)}; ` +
      `${APPENDS} concurrent: ${ms(concurrentMs)} total, ${rate(APPENDS * RECORDS, concurrentMs)}`,
  );
  const single: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t = performance.now();
    await log.append([{ key: `k${i}`, value: 'x'.repeat(300) }]);
    single.push(performance.now() - t);
  }
  single.sort((a, b) => a - b);
  console.log(`${name}: single-record append p50 ${ms(single[25]!)}, p95 ${ms(single[47]!)}`);
}

async function kafka(): Promise<void> {
  const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
  const topic = `event-log-bench-${randomSuffix()}`;
  const log = createKafkaEventLog({ brokers, topic });
  try {
    await measure('kafka (acks=-1, 6 partitions)', log);
  } finally {
    await log.close();
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
  }
}

async function postgres(name: string, pool: pg.Pool): Promise<void> {
  const table = `el_bench_${randomSuffix()}`;
  const log = createPostgresEventLog({ pool, table });
  try {
    await measure(name, log);
  } finally {
    await log.close();
    await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_offsets, ${table}_leases`);
  }
}

async function main(): Promise<void> {
  const which = process.argv.slice(2);
  const all = which.length === 0;
  if (all || which.includes('kafka')) await kafka();
  if (all || which.includes('postgres')) {
    const pool = serverPool();
    await postgres('postgres server', pool).finally(() => pool.end());
  }
  if (all || which.includes('pglite')) {
    const db = await PGlite.create();
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
    await server.start();
    const [host, port] = server.getServerConn().split(':');
    const pool = new pg.Pool({ host, port: Number(port), user: 'postgres', database: 'postgres', max: 1 });
    await postgres('pglite over a socket (pool of 1)', pool).finally(async () => {
      await pool.end();
      await server.stop();
      await db.close();
    });
  }
}

await main();
