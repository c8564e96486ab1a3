import { rmSync } from 'node:fs';
import type { ClickHouseClient } from '@clickhouse/client';
import type { DeliveryEvent } from '@tern/contracts';
import { createEventStream, createKafkaEventLog, type EventLog, encodeRecords } from '@tern/event-log';
import { createProjector } from '@tern/projector';
import { createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { quiet } from './setup.js';
import { compareWithOracle, duplicatesOf, generateStream, type RawEvent, report } from './stream.js';

/**
 * ClickHouse writes failing for a while under an in-process projector, with poison records in
 * the stream, ending with Postgres and ClickHouse compared exactly with the oracle of
 * test/faults/stream.ts. Bounded by FAULTS_EVENTS (default 20 000). The broker and the Postgres
 * faults run against servers of their own: kafka-stop and postgres-restart.faults.test.ts.
 */
const EVENTS = Number(process.env.FAULTS_EVENTS ?? 20_000);

describe('ClickHouse failing under the projector (in process)', () => {
  let db: { url: string; drop(): Promise<void> };
  let chDir: string;
  let direct: pg.Pool;
  let ch: { client: ClickHouseClient; close(): Promise<void> };

  beforeAll(async () => {
    db = await createFreshDatabase();
    direct = new pg.Pool({ connectionString: db.url, max: 4 });
    direct.on('error', () => undefined);
    await migratePostgres(direct);
    chDir = tempDir('tern-faults-ch-');
    ch = createClickHouse({
      dataDir: chDir,
      clickhouseUrl: testServices().clickhouseUrl,
    });
    await migrateClickHouse(ch.client);
  });
  afterAll(async () => {
    await ch?.close();
    await direct?.end();
    await db?.drop();
    if (chDir) rmSync(chDir, { recursive: true, force: true });
  });

  const kafkaLog = (topic: string): EventLog =>
    createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic,
      partitions: 3,
      logger: quiet,
      timeoutMs: 3000,
    });
  const appendAll = async (log: EventLog, events: RawEvent[]) => {
    for (let i = 0; i < events.length; i += 1000)
      await log.append(encodeRecords(events.slice(i, i + 1000) as DeliveryEvent[]));
  };

  it('ClickHouse writes failing for a while, plus poison records: 0 lost, 0 double-counted, poison dead-lettered', async () => {
    const stream = generateStream({
      minEvents: EVENTS,
      tenants: 4,
      seed: 21,
      prefix: `chf${Date.now() % 1e6}`,
    });
    const topic = uniqueName('faults-ch');
    const log = kafkaLog(topic);
    let failUntil = 0;
    let failures = 0;
    const flaky = new Proxy(ch.client, {
      get(target, prop, receiver) {
        if (prop === 'insert' && Date.now() < failUntil) {
          return async () => {
            failures++;
            throw Object.assign(new Error('Timeout error.'), { code: 'ETIMEDOUT' });
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const group = uniqueName('faults-ch-group');
    const projector = createProjector({
      pool: direct,
      ch: flaky,
      log: createEventStream(log),
      group,
      maxBatchSize: 2000,
      retry: { initialMs: 50, maxMs: 500 },
    });
    const tenant = stream.tenants[0]!;
    const poison = [
      '{"truncated": ',
      JSON.stringify({
        id: 'poison-nul',
        type: 'email.queued',
        tenantId: tenant,
        emailId: 'p1',
        occurredAt: '2026-10-02T00:00:00Z',
        data: { toEmail: 'p@example.com', subject: 'a\u0000b' },
      }),
      JSON.stringify({
        id: 'poison-sur',
        type: 'email.failed',
        tenantId: tenant,
        emailId: 'p2',
        occurredAt: '2026-10-02T00:00:00Z',
        data: { reason: '\ud800' },
      }),
      JSON.stringify({
        id: 'poison-old',
        type: 'email.delivered',
        tenantId: tenant,
        emailId: 'p3',
        occurredAt: '0000-01-01T00:00:00Z',
      }),
    ];
    try {
      const half = Math.floor(stream.events.length / 2);
      await appendAll(log, stream.events.slice(0, half));
      await log.append(poison.map((value) => ({ key: 'poison', value })));
      await appendAll(log, [...stream.events.slice(half), ...duplicatesOf(stream, 0.02, 22)]);
      const deadBefore = Number((await direct.query('SELECT count(*) AS n FROM dead_letters')).rows[0].n);
      failUntil = Date.now() + 1_000_000; // failing from the start…
      await projector.start();
      await waitFor(async () => failures >= 3, { description: 'inserts failing', timeoutMs: 60_000 });
      await new Promise((r) => setTimeout(r, 3000)); // …for a while
      failUntil = 0;
      await waitFor(async () => (await log.lag(group)) === 0, {
        description: 'caught up after ClickHouse came back',
        timeoutMs: 300_000,
      });
      const c = await compareWithOracle(stream, direct, ch.client);
      const dead =
        Number((await direct.query('SELECT count(*) AS n FROM dead_letters')).rows[0].n) - deadBefore;
      report(
        'clickhouse inserts failing (≥ 3 s) + 4 poison records',
        stream.events.length,
        c,
        `failedInserts=${failures} deadLetters=${dead}`,
      );
      expect(c.diffs).toEqual([]);
      expect({ lost: c.lost, double: c.double }).toEqual({ lost: 0, double: 0 });
      expect(dead).toBe(4);
    } finally {
      await projector.stop();
      await log.close();
    }
  });
});
