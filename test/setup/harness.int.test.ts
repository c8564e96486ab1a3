// Proves the global setup hands real, isolated services to test processes.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { kafkajs } from '@tern/event-log';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';

const { Kafka, logLevel } = kafkajs();

const services = testServices();

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('global setup', () => {
  it('gives this run a fresh database of its own', async () => {
    const rows = await query<{ db: string }>(services.databaseUrl, 'SELECT current_database() AS db');
    expect(rows[0]?.db).toMatch(/^tern_test_\d{14}_[0-9a-f]{6}$/);
    expect(rows[0]?.db).toBe(process.env.TERN_TEST_RUN_ID);
  });

  it('provides the same services through inject()', () => {
    const provided = inject('ternServices');
    expect(provided.databaseUrl).toBe(services.databaseUrl);
    expect(provided.kafkaBrokers).toEqual(services.kafkaBrokers);
    expect(provided.topicPrefix).toBe(process.env.TERN_TEST_TOPIC_PREFIX);
  });

  describe('kafka', () => {
    const admin = new Kafka({
      clientId: 'harness-test',
      brokers: services.kafkaBrokers,
      logLevel: logLevel.NOTHING,
    }).admin();
    afterAll(() => admin.disconnect());

    it('creates and lists a topic named with the run prefix', async () => {
      const topic = uniqueName('harness');
      expect(topic.startsWith(process.env.TERN_TEST_TOPIC_PREFIX ?? '?')).toBe(true);
      await admin.connect();
      await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
      const topics = await waitFor(async () => (await admin.listTopics()).includes(topic), {
        timeoutMs: 10_000,
        description: `topic ${topic} listed`,
      });
      expect(topics).toBe(true);
      const [meta] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      expect(meta?.partitions).toHaveLength(2);
    });
  });

  it('creates and drops an extra empty database', async () => {
    const fresh = await createFreshDatabase();
    const name = new URL(fresh.url).pathname.slice(1);
    const [row] = await query<{ db: string }>(fresh.url, 'SELECT current_database() AS db');
    expect(row?.db).toBe(name);
    await fresh.drop();
    const left = await query<{ n: string }>(
      services.databaseUrl,
      `SELECT count(*) AS n FROM pg_database WHERE datname = '${name}'`,
    );
    expect(left[0]?.n).toBe('0');
  });
});

describe('support helpers', () => {
  it('uniqueName never repeats', () => {
    const names = new Set(Array.from({ length: 200 }, () => uniqueName('t')));
    expect(names.size).toBe(200);
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
  });

  it('tempDir gives a new writable directory each time', () => {
    const a = tempDir();
    const b = tempDir();
    expect(a).not.toBe(b);
    writeFileSync(join(a, 'probe'), 'x');
    expect(existsSync(join(a, 'probe'))).toBe(true);
  });

  it('waitFor resolves with the first truthy value and times out with the last error', async () => {
    let calls = 0;
    await expect(waitFor(() => (++calls >= 3 ? calls : 0), { intervalMs: 1 })).resolves.toBe(3);
    await expect(
      waitFor(
        () => {
          throw new Error('not yet');
        },
        { timeoutMs: 30, intervalMs: 5, description: 'never' },
      ),
    ).rejects.toThrow(/waitFor \(never\) timed out after 30 ms; last error: not yet/);
  });
});
