import { connect, createServer, type Server, type Socket } from 'node:net';
import type { ClickHouseClient } from '@clickhouse/client';
import { createKafkaEventLog, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import { createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import type { ISocketFactory } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { compareWithOracle, duplicatesOf, generateStream, type RawEvent, report } from './stream.js';

/**
 * Faults around one in-process projector, each on its own slice of tenants, each ending with
 * Postgres and ClickHouse compared exactly with the oracle of test/faults/stream.ts. Sizes are
 * bounded (FAULTS_EVENTS, default 20 000 per fault) so the whole file runs in minutes on 2 cores.
 */
const EVENTS = Number(process.env.FAULTS_EVENTS ?? 20_000);
const TOKEN = 'faults-ingest-token-0123456789abcdef';
const quiet = process.env.FAULTS_DEBUG
  ? {
      info() {},
      warn: (o: object, m?: string) => console.log('WARN', m, JSON.stringify(o).slice(0, 300)),
      error: (o: object, m?: string) => console.log('ERROR', m, JSON.stringify(o).slice(0, 300)),
    }
  : { info() {}, warn() {}, error() {} };

/** A TCP proxy to Postgres whose "restart" drops every connection and refuses new ones for a while. */
async function postgresProxy(
  target: URL,
): Promise<{ url: string; restart(downMs: number): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let down = false;
  const server: Server = createServer((client) => {
    if (down) return client.destroy();
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    async restart(downMs) {
      down = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
      await new Promise((r) => setTimeout(r, downMs));
      down = false;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** kafkajs sockets through a gate: `cut()` drops every connection and refuses new ones (the broker "stops"). */
function gatedSockets(): { factory: ISocketFactory; cut(): void; restore(): void } {
  const open = new Set<Socket>();
  let down = false;
  const factory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = connect({ host, port }, onConnect);
    if (down)
      setImmediate(() =>
        socket.destroy(
          Object.assign(new Error('connect ECONNREFUSED (broker down)'), { code: 'ECONNREFUSED' }),
        ),
      );
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    return socket;
  };
  return {
    factory,
    cut() {
      down = true;
      // As a stopped broker's sockets end: reset by the peer (an error the client sees).
      for (const s of open) s.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    },
    restore() {
      down = false;
    },
  };
}

describe('faults around the projector (in process)', () => {
  let db: { url: string; drop(): Promise<void> };
  let proxy: Awaited<ReturnType<typeof postgresProxy>>;
  let direct: pg.Pool;
  let ch: { client: ClickHouseClient; close(): Promise<void> };

  beforeAll(async () => {
    db = await createFreshDatabase();
    direct = new pg.Pool({ connectionString: db.url, max: 4 });
    direct.on('error', () => undefined);
    await migratePostgres(direct);
    proxy = await postgresProxy(new URL(db.url));
    ch = createClickHouse({
      dataDir: tempDir('tern-faults-ch-'),
      clickhouseUrl: testServices().clickhouseUrl,
    });
    await migrateClickHouse(ch.client);
  });
  afterAll(async () => {
    await ch?.close();
    await direct?.end();
    await proxy?.close();
    await db?.drop();
  });

  const kafkaLog = (topic: string, socketFactory?: ISocketFactory): EventLog =>
    createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic,
      partitions: 3,
      logger: quiet,
      timeoutMs: 3000,
      ...(socketFactory ? { socketFactory } : {}),
    });
  const appendAll = async (log: EventLog, events: RawEvent[]) => {
    for (let i = 0; i < events.length; i += 1000)
      await log.append(events.slice(i, i + 1000).map((e) => ({ key: e.emailId, value: JSON.stringify(e) })));
  };
  const eventsTotal = async () =>
    Number(
      (await direct.query('SELECT coalesce(max(events_total), 0) AS n FROM projection_status')).rows[0].n,
    );

  it('Postgres restarted during projection: 0 lost, 0 double-counted', async () => {
    const stream = generateStream({
      minEvents: EVENTS,
      tenants: 4,
      seed: 11,
      prefix: `pgr${Date.now() % 1e6}`,
    });
    const topic = uniqueName('faults-pg');
    const log = kafkaLog(topic);
    const pool = new pg.Pool({ connectionString: proxy.url, max: 4, connectionTimeoutMillis: 2000 });
    pool.on('error', () => undefined);
    const group = uniqueName('faults-pg-group');
    const projector = createProjector({
      pool,
      ch: ch.client,
      log,
      group,
      maxBatchSize: 2000,
      retry: { initialMs: 50, maxMs: 500 },
    });
    try {
      await appendAll(log, [...stream.events, ...duplicatesOf(stream, 0.02, 12)]);
      const before = await eventsTotal();
      await projector.start();
      await waitFor(async () => (await eventsTotal()) - before > EVENTS * 0.3, {
        description: 'a third projected',
        timeoutMs: 300_000,
        intervalMs: 20,
      });
      await proxy.restart(3000);
      await waitFor(async () => (await log.lag(group)) === 0, {
        description: 'caught up after the restart',
        timeoutMs: 300_000,
      });
      const c = await compareWithOracle(stream, direct, ch.client);
      report('postgres restarted (3 s) during projection', stream.events.length, c);
      expect(c.diffs).toEqual([]);
      expect({ lost: c.lost, double: c.double }).toEqual({ lost: 0, double: 0 });
    } finally {
      await projector.stop();
      await log.close();
      await pool.end();
    }
  });

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
      log,
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

  it('Kafka broker unreachable during ingest: 503 while down, every 202 event projected after', async () => {
    const stream = generateStream({
      minEvents: EVENTS,
      tenants: 4,
      seed: 31,
      prefix: `kfk${Date.now() % 1e6}`,
    });
    const topic = uniqueName('faults-kafka');
    const gate = gatedSockets();
    const ingestLog = kafkaLog(topic, gate.factory);
    // The ingest side loses the broker; the projector's own connection stays (a real stop would
    // pause it too, which the kill -9 and Postgres cases already cover on the consuming side).
    const projectorLog = kafkaLog(topic);
    const ingest = await createIngestApp({ log: ingestLog, ingestToken: TOKEN });
    const group = uniqueName('faults-kafka-group');
    const projector = createProjector({
      pool: direct,
      ch: ch.client,
      log: projectorLog,
      group,
      maxBatchSize: 2000,
      retry: { initialMs: 50, maxMs: 500 },
    });
    const statuses: Record<number, number> = {};
    try {
      await projector.start();
      const batches: RawEvent[][] = [];
      for (let i = 0; i < stream.events.length; i += 500) batches.push(stream.events.slice(i, i + 500));
      const downAt = Math.floor(batches.length / 3);
      let downUntil = 0;
      for (let b = 0; b < batches.length; b++) {
        if (b === downAt) {
          gate.cut();
          downUntil = Date.now() + 4000;
        }
        if (downUntil && Date.now() > downUntil) {
          gate.restore();
          downUntil = 0;
        }
        // A sender retries what got 503, as Retry-After tells it to.
        for (let attempt = 0; ; attempt++) {
          const res = await ingest.inject({
            method: 'POST',
            url: '/events',
            headers: { authorization: `Bearer ${TOKEN}` },
            payload: { events: batches[b] },
          });
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          if (process.env.FAULTS_DEBUG) console.log(`batch ${b} attempt ${attempt}: ${res.statusCode}`);
          if (res.statusCode === 202) break;
          expect(res.statusCode).toBe(503);
          expect(res.headers['retry-after']).toBe('5');
          if (downUntil && Date.now() > downUntil) {
            gate.restore();
            downUntil = 0;
          }
          await new Promise((r) => setTimeout(r, 200));
          expect(attempt).toBeLessThan(200);
        }
      }
      await waitFor(async () => (await projectorLog.lag(group)) === 0, {
        description: 'caught up after the broker came back',
        timeoutMs: 300_000,
      });
      const c = await compareWithOracle(stream, direct, ch.client);
      report(
        'kafka broker unreachable (4 s) during ingest',
        stream.events.length,
        c,
        `http=${JSON.stringify(statuses)}`,
      );
      expect(statuses[503]).toBeGreaterThan(0);
      expect(c.diffs).toEqual([]);
      expect({ lost: c.lost, double: c.double }).toEqual({ lost: 0, double: 0 });
    } finally {
      gate.restore();
      await projector.stop();
      await ingest.close();
      await ingestLog.close();
      await projectorLog.close();
    }
  });
});
