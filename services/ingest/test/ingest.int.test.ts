import { randomBytes } from 'node:crypto';
import {
  createEventStream,
  createKafkaEventLog,
  createPostgresEventLog,
  type EventLog,
} from '@tern/event-log';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServices, uniqueName } from '../../../test/support/services.js';
import { createIngestApp, INGEST_BODY_LIMIT } from '../src/index.js';

const TOKEN = `ingest-${randomBytes(16).toString('hex')}`;
const suffix = () => randomBytes(5).toString('hex');

const event = (i: number, over: Record<string, unknown> = {}) => ({
  id: `evt-${i}`,
  type: 'email.queued',
  tenantId: 'tenant-a',
  emailId: `email-${i}`,
  occurredAt: '2026-11-01T10:00:00.000Z',
  data: { toEmail: `user${i}@example.com`, subject: `Hello ${i}` },
  ...over,
});

interface Adapter {
  name: string;
  make(): Promise<{ log: EventLog; cleanup(): Promise<void> }>;
}

const adapters: Adapter[] = [
  {
    name: 'kafka',
    async make() {
      const log = createKafkaEventLog({
        brokers: testServices().kafkaBrokers,
        topic: uniqueName('ingest'),
        partitions: 3,
      });
      await log.ping();
      return { log, cleanup: () => log.close() };
    },
  },
  {
    name: 'postgres table',
    async make() {
      const pool = new pg.Pool({ connectionString: testServices().databaseUrl, max: 4 });
      // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
      pool.on('error', () => undefined);
      const table = `ingest_log_${suffix()}`;
      const log = createPostgresEventLog({ pool, table });
      await log.ensureSchema();
      return {
        log,
        async cleanup() {
          await log.close();
          await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_offsets, ${table}_leases`);
          await pool.end();
        },
      };
    },
  },
];

describe.each(adapters)('POST /events on the $name log', (adapter) => {
  let app: FastifyInstance;
  let log: EventLog;
  let cleanup: () => Promise<void>;
  // A group that never commits: its lag is the number of records in the log.
  const appended = () => log.lag(`never-commits-${adapter.name.replace(/\W/g, '')}`);

  beforeAll(async () => {
    ({ log, cleanup } = await adapter.make());
    app = await createIngestApp({ log: createEventStream(log), ingestToken: TOKEN });
  });
  afterAll(async () => {
    await app?.close();
    await cleanup?.();
  });

  const post = (body: unknown, token: string | null = TOKEN) =>
    app.inject({
      method: 'POST',
      url: '/events',
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
      payload: body as object,
    });

  describe('202', () => {
    it('accepts one event once the log has it', async () => {
      const before = await appended();
      const res = await post(event(1));
      expect(res.statusCode).toBe(202);
      expect(res.json()).toEqual({ accepted: 1, position: 'evt-1' });
      expect(await appended()).toBe(before + 1);
    });

    it('accepts a batch of 1000 events', async () => {
      const before = await appended();
      const events = Array.from({ length: 1000 }, (_, i) => event(10_000 + i));
      const res = await post({ events });
      expect(res.statusCode).toBe(202);
      // The position: the last event on each partition, partitions ascending (3 on Kafka, 1 on the table).
      const partitions = await log.partitionsOf(events.map((e) => e.emailId));
      const lastOn = new Map<number, string>();
      for (const [i, e] of events.entries()) lastOn.set(partitions[i]!, e.id);
      const position = [...lastOn]
        .sort(([a], [b]) => a - b)
        .map(([, id]) => id)
        .join(',');
      expect(position.split(',')).toHaveLength(adapter.name === 'kafka' ? 3 : 1);
      expect(position.split(',')).toContain('evt-10999');
      expect(res.json()).toEqual({ accepted: 1000, position });
      expect(await appended()).toBe(before + 1000);
    });
  });

  describe('400', () => {
    it('a path that does not decode, over a socket: 400 BAD_REQUEST of the contract, nothing appended', async () => {
      const before = await appended();
      const address = await app.listen({ port: 0, host: '127.0.0.1' });
      const res = await fetch(`${address}/events%zz`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(event(19)),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe('BAD_REQUEST');
      expect(await appended()).toBe(before);
    });

    it('refuses the whole batch, listing every bad index, and appends nothing', async () => {
      const before = await appended();
      const events = [
        event(20),
        event(21, { type: 'email.exploded' }),
        event(22),
        event(23, { occurredAt: 'yesterday' }),
        event(24, { tenantId: 'has space' }),
        event(25, { type: 'email.sent', data: { provider: 'ses' } }),
      ];
      const res = await post({ events });
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'INVALID_EVENTS' });
      expect(body.message).toContain('index 1, 3, 4, 5');
      expect(body.message).toContain('events[3].occurredAt');
      expect(body.issues.map((i: { index: number }) => i.index)).toEqual([1, 3, 4, 5]);
      expect(await appended()).toBe(before);
    });

    it.each([
      ['an empty batch', { events: [] }, 'at least 1'],
      ['more than 1000 events', { events: Array.from({ length: 1001 }, (_, i) => event(i)) }, 'at most 1000'],
      ['events that is not an array', { events: 'nope' }, 'must be an array'],
      ['a JSON array body', [event(1)], 'one event object'],
      ['a missing field', { ...event(30), emailId: undefined }, 'emailId'],
    ])('refuses %s', async (_name, body, fragment) => {
      const before = await appended();
      const res = await post(body);
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain(fragment);
      expect(await appended()).toBe(before);
    });

    it('refuses a body that is not JSON', async () => {
      const res = await app.inject({
        method: 'POST',
        url: '/events',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        payload: '{"id": ',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().statusCode).toBe(400);
    });
  });

  describe('401', () => {
    it('refuses a request without the ingest token', async () => {
      const res = await post(event(40), null);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
    });

    it('refuses a wrong token and appends nothing', async () => {
      const before = await appended();
      const res = await post(event(41), `${TOKEN}x`);
      expect(res.statusCode).toBe(401);
      expect(await appended()).toBe(before);
    });
  });

  describe('413', () => {
    it('refuses a body over the limit', async () => {
      const big = {
        ...event(50),
        data: { toEmail: 'a@example.com', subject: 'x'.repeat(INGEST_BODY_LIMIT) },
      };
      const res = await post(big);
      expect(res.statusCode).toBe(413);
      expect(res.json()).toMatchObject({ statusCode: 413, error: 'Payload Too Large' });
    });
  });

  describe('issue 9, item 4: the token before the body; capped answers', () => {
    it('refuses a request without a valid token before reading its body (401, not 400 or 413)', async () => {
      const before = await appended();
      const garbage = await app.inject({
        method: 'POST',
        url: '/events',
        headers: { 'content-type': 'application/json' },
        payload: '{"not json',
      });
      expect(garbage.statusCode).toBe(401);
      const huge = await app.inject({
        method: 'POST',
        url: '/events',
        headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
        payload: `{"events":[${'0,'.repeat(INGEST_BODY_LIMIT / 2)}0]}`,
      });
      expect(huge.statusCode).toBe(401);
      expect(huge.json().message).toBe('Invalid ingest token');
      expect(await appended()).toBe(before);
    });

    it('accepts the Bearer scheme in any case', async () => {
      for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
        const res = await app.inject({
          method: 'POST',
          url: '/events',
          headers: { authorization: `${scheme}  ${TOKEN}` },
          payload: event(70),
        });
        expect(res.statusCode, scheme).toBe(202);
      }
    });

    it('caps the issues of a 400 (1000 bad events answer a small body)', async () => {
      const events = Array.from({ length: 1000 }, (_, i) =>
        event(80_000 + i, {
          type: 'email.sent',
          data: { provider: 'x'.repeat(200), bogus: 'y'.repeat(3000) },
        }),
      );
      const res = await post({ events });
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body.issues).toHaveLength(20);
      expect(body.issuesTotal).toBeGreaterThanOrEqual(1000);
      expect(res.body.length).toBeLessThan(20_000);
    });

    it('refuses U+0000, a lone surrogate and a year-0000 occurredAt with 400 naming the field (issue 9, item 1)', async () => {
      const before = await appended();
      const res = await app.inject({
        method: 'POST',
        url: '/events',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        payload: JSON.stringify({
          events: [
            event(90, { data: { toEmail: 'a@example.com', subject: 'a\u0000b' } }),
            event(91, { occurredAt: '0000-01-01T00:00:00Z' }),
          ],
        }),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain(
        'events[0].data.subject: subject must not contain the control character U+0000',
      );
      expect(res.json().message).toContain('events[1].occurredAt: occurredAt must be between 1970-01-01');
      const surrogate = await app.inject({
        method: 'POST',
        url: '/events',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        payload:
          '{"id":"s1","type":"email.failed","tenantId":"t","emailId":"e","occurredAt":"2026-11-01T10:00:00Z","data":{"reason":"\\ud800"}}',
      });
      expect(surrogate.statusCode).toBe(400);
      expect(surrogate.json().message).toContain(
        'data.reason: reason must not contain a lone UTF-16 surrogate',
      );
      expect(await appended()).toBe(before);
    });
  });

  describe('health', () => {
    it('/health answers and /ready checks the log', async () => {
      expect((await app.inject('/health')).statusCode).toBe(200);
      const ready = await app.inject('/ready');
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toMatchObject({ status: 'ready' });
    });
  });
});

describe('POST /events while the log is unavailable', () => {
  it('answers 503 with Retry-After, and /ready says not ready', async () => {
    // A closed port: the broker "is down".
    const quiet = { info() {}, warn() {}, error() {} };
    const log = createKafkaEventLog({ brokers: ['127.0.0.1:1'], topic: `down-${suffix()}`, logger: quiet });
    const app = await createIngestApp({ log: createEventStream(log), ingestToken: TOKEN });
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/events',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { events: [event(60), event(61)] },
      });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json()).toMatchObject({ statusCode: 503, code: 'LOG_UNAVAILABLE' });
      expect((await app.inject('/ready')).statusCode).toBe(503);
    } finally {
      await app.close();
      await log.close();
    }
  }, 60_000);
});
