import type { AddressInfo } from 'node:net';
import { createEventStream, createKafkaEventLog, type EventLog } from '@tern/event-log';
import { withTransaction } from '@tern/kernel';
import { appendContactEvents, eventsReplayRange } from '@tern/read-models';
import { createSecretBox } from '@tern/webhooks';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServices, uniqueName, waitFor } from '../../../test/support/services.js';
import {
  bearer,
  buildApp,
  createClock,
  createKey,
  jwtFor,
  openStores,
  type Stores,
  WEBHOOK_SECRETS_KEY,
} from '../../api/test/support.js';
import { createDispatcher, type Dispatcher } from '../src/index.js';
import { type Receiver, startReceiver } from './receiver.js';
import { emailEvents, publish, queued, suffix } from './support.js';

// `POST /webhooks/:id/replay { after }` (SPEC §25): the api on a real socket (createApiApp on a
// fresh Postgres and chDB), the dispatcher on a real Kafka topic, and a real HTTP receiver on
// loopback verifying every request with the reference `standardwebhooks` package.

interface StreamEvent {
  id: string;
  cursor: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}
interface Replay {
  id: string;
  webhookId: string;
  after: string | null;
  through: string | null;
  hasMore: boolean;
  status: string;
}

const box = createSecretBox(WEBHOOK_SECRETS_KEY);
const tenant = `rc-${suffix()}`;
const path = `/replay-cursor-${tenant}`;
const FILTER = ['email.sent', 'email.delivered'];
let stores: Stores;
let app: FastifyInstance;
let base: string;
let log: EventLog;
let receiver: Receiver;
let dispatcher: Dispatcher | undefined;
const group = uniqueName('replay-cursor-group');
let manageKey: string;
let readKey: string;
let endpointId: string;
let all: StreamEvent[];

const startDispatcher = async () => {
  dispatcher = createDispatcher({
    pool: stores.pool,
    log: createEventStream(log),
    group,
    secretBox: box,
    allowPrivate: true,
    retryScheduleMs: [150, 150],
    timeoutMs: 2_000,
    // One attempt at a time: the receiver sees the deliveries in the order they are claimed.
    concurrency: 1,
    pollIntervalMs: 25,
    replayPollMs: 100,
    maxWaitMs: 50,
  });
  await dispatcher.start();
};

const call = (method: string, url: string, key: string, body?: unknown) =>
  fetch(`${base}${url}`, {
    method,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const replay = (after: unknown, key = manageKey, id = endpointId) =>
  call('POST', `/webhooks/${id}/replay`, key, { after });

beforeAll(async () => {
  stores = await openStores();
  const clock = createClock(new Date().toISOString());
  app = await buildApp(stores, clock);
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  log = createKafkaEventLog({
    brokers: testServices().kafkaBrokers,
    topic: uniqueName('replay-cursor'),
    partitions: 2,
  });
  receiver = await startReceiver();
  const jwt = jwtFor(clock, tenant);
  manageKey = (await createKey(app, jwt, tenant, { scopes: ['webhooks:manage'] })).key;
  readKey = (await createKey(app, jwt, tenant, { scopes: ['events:read'] })).key;
  const created = await call('POST', '/webhooks', manageKey, { url: receiver.url(path), events: FILTER });
  expect(created.status).toBe(201);
  const endpoint = (await created.json()) as { id: string; secret: string };
  endpointId = endpoint.id;
  receiver.secrets.set(endpoint.id, endpoint.secret);

  // Six emails: queued, sent, delivered each (18 events, 12 of them the endpoint's types).
  await startDispatcher();
  for (let i = 0; i < 6; i++) {
    await publish(
      log,
      stores.pool,
      emailEvents(tenant, `em-rc-${i}`, [
        queued(`r${i}@example.com`, `Hello ${i}`),
        { type: 'email.sent', data: { provider: 'sandbox', messageId: `m-${i}` } },
        { type: 'email.delivered' },
      ]),
    );
  }
  await waitFor(() => receiver.on(path).length >= 12, { timeoutMs: 30_000, description: 'live deliveries' });
  all = ((await (await call('GET', '/events?limit=1000', readKey)).json()) as { data: StreamEvent[] }).data;
  expect(all).toHaveLength(18);
  // The live consumer stops: the replays below are asked while no dispatcher runs them.
  await dispatcher?.stop();
  dispatcher = undefined;
}, 120_000);

afterAll(async () => {
  await dispatcher?.stop();
  await app?.close();
  await log?.close();
  await receiver?.close();
  await stores?.close();
});

describe('POST /webhooks/:id/replay { after }', () => {
  it('refuses a bad cursor (400), a key without webhooks:manage (403), an unknown endpoint (404)', async () => {
    for (const [after, field] of [
      ['abc', 'body.after'],
      ['-1', 'body.after'],
      [12, 'body.after'],
      ['9'.repeat(19), 'body.after'],
      // Beyond the stream's head: no event has this cursor.
      ['999999', 'body.after'],
    ] as const) {
      const res = await replay(after);
      expect(res.status, String(after)).toBe(400);
      expect(((await res.json()) as { message: string }).message).toContain(field);
    }
    const both = await call('POST', `/webhooks/${endpointId}/replay`, manageKey, {
      after: '1',
      since: '2026-01-01T00:00:00Z',
    });
    expect(both.status).toBe(400);
    const until = await call('POST', `/webhooks/${endpointId}/replay`, manageKey, {
      after: '1',
      until: '2026-01-01T00:00:00Z',
    });
    expect(until.status).toBe(400);

    const denied = await replay('1', readKey);
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ code: 'MISSING_SCOPE', missingScope: 'webhooks:manage' });
    expect((await replay('1', manageKey, 'wh_unknown0000000000000000')).status).toBe(404);
  });

  it('a cursor past retention answers 410 CURSOR_EXPIRED', async () => {
    const later = await buildApp(stores, createClock(new Date(Date.now() + 31 * 86_400_000).toISOString()));
    await later.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(later.server.address() as AddressInfo).port}/webhooks/${endpointId}/replay`;
      const res = await fetch(url, {
        method: 'POST',
        headers: { ...bearer(manageKey), 'content-type': 'application/json' },
        body: JSON.stringify({ after: all[0]!.cursor }),
      });
      expect(res.status).toBe(410);
      expect(await res.json()).toMatchObject({ code: 'CURSOR_EXPIRED' });
    } finally {
      await later.close();
    }
  });

  it('delivers exactly the subscribed events after the cursor, in stream order, signed, once', async () => {
    const after = all[7]!.cursor;
    const expected = all.filter((e) => BigInt(e.cursor) > BigInt(after) && FILTER.includes(e.type));
    expect(expected.length).toBeGreaterThan(3);
    expect(expected.length).toBeLessThan(12);

    // Asked twice at once (a retried request): one replay.
    const [first, second] = await Promise.all([replay(after), replay(after)]);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    const a = (await first.json()) as Replay;
    const b = (await second.json()) as Replay;
    expect(a).toMatchObject({
      webhookId: endpointId,
      after,
      through: all.at(-1)!.cursor,
      hasMore: false,
      status: 'pending',
    });
    expect(b.id).toBe(a.id);

    const before = receiver.on(path).length;
    await startDispatcher();
    await waitFor(() => receiver.on(path).length >= before + expected.length, {
      timeoutMs: 30_000,
      description: 'replayed deliveries',
    });
    await waitFor(
      async () =>
        (await stores.pool.query(`SELECT status FROM webhook_replays WHERE id = $1`, [a.id])).rows[0]
          ?.status === 'done',
      { timeoutMs: 20_000, description: 'the replay to finish' },
    );
    // Time for a duplicate to show up.
    await new Promise((r) => setTimeout(r, 1_000));
    const replayed = receiver.on(path).slice(before);
    expect(replayed.map((r) => r.headers['webhook-id'])).toEqual(expected.map((e) => e.id));
    for (const [i, r] of replayed.entries()) {
      expect(r.verifiedBy).toEqual([endpointId]);
      // The body is the event as the stream reads it (`GET /events` without id and cursor); it differs
      // from the live delivery's at most by `status`: the stream's is the email's as of the event,
      // the live one's the email's when its body was fixed (docs/webhooks.md).
      const { id: _id, cursor: _cursor, ...body } = expected[i]!;
      expect(JSON.parse(r.body)).toEqual(body);
      const live = receiver.on(path).find((l) => l.headers['webhook-id'] === expected[i]!.id)!;
      const withoutStatus = (json: string) => {
        const parsed = JSON.parse(json) as { data: Record<string, unknown> };
        delete parsed.data.status;
        return parsed;
      };
      expect(withoutStatus(r.body)).toEqual(withoutStatus(live.body));
    }
    const { rows } = await stores.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE replay_id = $1',
      [a.id],
    );
    expect(rows[0]!.n).toBe(expected.length);

    // Once done, the same cursor replays again (a new replay, the same events).
    const again = (await (await replay(after)).json()) as Replay;
    expect(again.id).not.toBe(a.id);
    await waitFor(() => receiver.on(path).length >= before + 2 * expected.length, {
      timeoutMs: 30_000,
      description: 'the second replay',
    });
    expect(
      receiver
        .on(path)
        .slice(before + expected.length)
        .map((r) => r.headers['webhook-id']),
    ).toEqual(expected.map((e) => e.id));
  }, 90_000);

  it('the head as cursor replays nothing', async () => {
    const res = await replay(all.at(-1)!.cursor);
    expect(res.status).toBe(202);
    const r = (await res.json()) as Replay;
    expect(r).toMatchObject({ after: all.at(-1)!.cursor, through: all.at(-1)!.cursor, hasMore: false });
    await waitFor(
      async () =>
        (await stores.pool.query(`SELECT status, enqueued FROM webhook_replays WHERE id = $1`, [r.id]))
          .rows[0]?.status === 'done',
      { timeoutMs: 20_000, description: 'the empty replay to finish' },
    );
    const { rows } = await stores.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE replay_id = $1',
      [r.id],
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('one replay is bounded: past `max` matching events it stops at the max-th (hasMore)', async () => {
    const matching = all.filter((e) => FILTER.includes(e.type));
    const range = await eventsReplayRange(stores.pool, {
      tenantId: tenant,
      after: 0n,
      cutoff: new Date(0),
      types: FILTER,
      max: 5,
    });
    expect(range).toEqual({ kind: 'range', through: matching[4]!.cursor, count: 5, hasMore: true });
    // Exactly `max` left: no more.
    const rest = await eventsReplayRange(stores.pool, {
      tenantId: tenant,
      after: BigInt(matching[6]!.cursor),
      cutoff: new Date(0),
      types: FILTER,
      max: 5,
    });
    expect(rest).toEqual({ kind: 'range', through: all.at(-1)!.cursor, count: 5, hasMore: false });
  });
  // Runs last: it adds a custom event to the tenant's stream, past the head the tests above read.
  it("an endpoint without a filter replays every webhook event type, never the stream's custom events", async () => {
    await withTransaction(stores.pool, (c) =>
      appendContactEvents(c, tenant, [
        {
          id: `evt_${suffix()}`,
          contactId: 'ct_rc',
          type: 'signed_up',
          timestamp: new Date().toISOString(),
          data: {},
        },
      ]),
    );
    const listed = (
      (await (await call('GET', '/events?limit=1000', readKey)).json()) as { data: StreamEvent[] }
    ).data;
    expect(listed.map((e) => e.type)).toContain('signed_up');
    const created = await call('POST', '/webhooks', manageKey, { url: receiver.url(`${path}-all`) });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string; secret: string };
    receiver.secrets.set(endpoint.id, endpoint.secret);
    const res = await replay('0', manageKey, endpoint.id);
    expect(res.status).toBe(202);
    const r = (await res.json()) as Replay;
    expect(r).toMatchObject({ after: '0', through: listed.at(-1)!.cursor, hasMore: false });
    await startDispatcher();
    await waitFor(
      async () =>
        (await stores.pool.query(`SELECT status FROM webhook_replays WHERE id = $1`, [r.id])).rows[0]
          ?.status === 'done',
      { timeoutMs: 30_000, description: 'the replay to finish' },
    );
    const { rows } = await stores.pool.query<{ event_type: string; n: number }>(
      'SELECT event_type, count(*)::int AS n FROM webhook_deliveries WHERE replay_id = $1 GROUP BY 1 ORDER BY 1',
      [r.id],
    );
    // The 18 events of the six emails, by type; not the custom one.
    expect(rows).toEqual([
      { event_type: 'email.delivered', n: 6 },
      { event_type: 'email.queued', n: 6 },
      { event_type: 'email.sent', n: 6 },
    ]);
  });
});
