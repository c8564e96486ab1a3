import { domainEventSchema } from '@tern/contracts';
import { createEventStream, createKafkaEventLog, type EventLog } from '@tern/event-log';
import * as webhookStore from '@tern/webhooks';
import { createSecretBox } from '@tern/webhooks';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testServices, uniqueName, waitFor } from '../../../test/support/services.js';
import { type AttemptRecord, createDispatcher, type Dispatcher, postWebhook } from '../src/index.js';
import { type Receiver, startReceiver } from './receiver.js';
import { createEndpoint, emailEvents, openDatabase, publish, queued, suffix } from './support.js';

// The dispatcher against a real Kafka broker, a real Postgres and a real HTTP receiver on
// loopback that verifies every request with the reference `standardwebhooks` package.

const box = createSecretBox('dispatcher-test-secrets-key');
const RETRIES = [150, 150, 150];
let db: Awaited<ReturnType<typeof openDatabase>>;
let pool: pg.Pool;
let log: EventLog;
let dispatcher: Dispatcher;
let receiver: Receiver;
const attempts: AttemptRecord[] = [];

beforeAll(async () => {
  db = await openDatabase();
  pool = db.pool;
  log = createKafkaEventLog({
    brokers: testServices().kafkaBrokers,
    topic: uniqueName('dispatcher'),
    partitions: 2,
  });
  receiver = await startReceiver();
  dispatcher = createDispatcher({
    pool,
    log: createEventStream(log),
    group: uniqueName('dispatcher-group'),
    secretBox: box,
    allowPrivate: true,
    retryScheduleMs: RETRIES,
    timeoutMs: 400,
    leaseMs: 2_000,
    pollIntervalMs: 25,
    replayPollMs: 100,
    maxWaitMs: 50,
    onAttempt: (a) => attempts.push(a),
  });
  await dispatcher.start();
});

afterAll(async () => {
  await dispatcher?.stop();
  await log?.close();
  await receiver?.close();
  await db?.close();
});

beforeEach(() => {
  receiver.reply = () => ({ status: 200 });
});

const deliveriesOf = async (endpointId: string) =>
  (
    await pool.query<{
      event_id: string;
      status: string;
      attempts: number;
      replay_id: string;
      recipient: string | null;
    }>(
      `SELECT event_id, status, attempts, replay_id, recipient FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`,
      [endpointId],
    )
  ).rows;

const attemptsOf = async (endpointId: string) =>
  (
    await pool.query<{
      attempt: number;
      status_code: number | null;
      error: string | null;
      response_excerpt: string | null;
    }>(
      `SELECT a.attempt, a.status_code, a.error, a.response_excerpt FROM webhook_attempts a
       JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 ORDER BY d.id, a.attempt`,
      [endpointId],
    )
  ).rows;

describe('delivery', () => {
  it('delivers each event once, signed, with the Standard Webhooks headers and the email in data', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/ok-${suffix()}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    receiver.secrets.set(endpoint.id, endpoint.secret);
    const events = emailEvents(tenant, 'em-1', [
      queued('ada@example.com', 'Welcome', ['onboarding']),
      { type: 'email.sent', data: { provider: 'sandbox', messageId: 'm-1' } },
      { type: 'email.delivered' },
    ]);
    await publish(log, pool, events);

    await waitFor(() => receiver.on(path).length >= 3, {
      timeoutMs: 20_000,
      description: 'three deliveries',
    });
    const got = receiver.on(path);
    expect(got.map((r) => r.headers['webhook-id']).sort()).toEqual(events.map((e) => e.id).sort());
    for (const r of got) {
      expect(r.verifiedBy).toEqual([endpoint.id]);
      expect(r.headers['content-type']).toBe('application/json');
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    }
    const delivered = JSON.parse(got.find((r) => r.headers['webhook-id'] === events[2]!.id)!.body);
    expect(delivered).toEqual({
      type: 'email.delivered',
      timestamp: events[2]!.occurredAt,
      data: {
        emailId: 'em-1',
        tenantId: tenant,
        projectId: null,
        to: 'ada@example.com',
        subject: 'Welcome',
        tags: ['onboarding'],
        status: 'DELIVERED',
      },
    });
    const sent = JSON.parse(got.find((r) => r.headers['webhook-id'] === events[1]!.id)!.body);
    expect(sent.data).toMatchObject({ provider: 'sandbox', messageId: 'm-1', to: 'ada@example.com' });

    await waitFor(async () => (await deliveriesOf(endpoint.id)).every((d) => d.status === 'delivered'), {
      description: 'rows delivered',
    });
    const rows = await deliveriesOf(endpoint.id);
    expect(rows).toHaveLength(3);
    expect(rows.every((d) => d.attempts === 1 && d.recipient === 'ada@example.com')).toBe(true);
    expect((await attemptsOf(endpoint.id)).every((a) => a.status_code === 200 && a.error === null)).toBe(
      true,
    );
  });

  it('event filter: an endpoint gets only its types; another tenant’s endpoint gets nothing', async () => {
    const tenant = `t-${suffix()}`;
    const onlyBounces = await createEndpoint(pool, box, tenant, receiver.url(`/bounces-${tenant}`), [
      'email.bounced',
    ]);
    const otherTenant = await createEndpoint(pool, box, `x-${suffix()}`, receiver.url(`/other-${tenant}`));
    const all = await createEndpoint(pool, box, tenant, receiver.url(`/all-${tenant}`));
    const events = emailEvents(tenant, 'em-2', [
      queued(),
      { type: 'email.sent', data: { provider: 'p', messageId: 'm' } },
      { type: 'email.bounced', data: { bounceType: 'hard' } },
    ]);
    await publish(log, pool, events);
    await waitFor(() => receiver.on(`/all-${tenant}`).length >= 3, { timeoutMs: 20_000, description: 'all' });
    await waitFor(() => receiver.on(`/bounces-${tenant}`).length >= 1, { description: 'bounce' });
    // Both endpoints got their events from the same batches: the filtered one has had its chance.
    expect(receiver.on(`/bounces-${tenant}`).map((r) => JSON.parse(r.body).type)).toEqual(['email.bounced']);
    expect(receiver.on(`/other-${tenant}`)).toHaveLength(0);
    expect(await deliveriesOf(otherTenant.id)).toHaveLength(0);
    expect(await deliveriesOf(onlyBounces.id)).toHaveLength(1);
    expect(await deliveriesOf(all.id)).toHaveLength(3);
  });

  it('a re-read of the same records makes no second delivery (at-least-once in, one delivery out)', async () => {
    const tenant = `t-${suffix()}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(`/dup-${tenant}`));
    const events = emailEvents(tenant, 'em-3', [queued()]);
    await publish(log, pool, events);
    await waitFor(async () => (await deliveriesOf(endpoint.id)).length === 1, { timeoutMs: 20_000 });
    expect(await dispatcher.enqueue([events[0]!, events[0]!])).toBe(0);
    expect(await deliveriesOf(endpoint.id)).toHaveLength(1);
  });

  it('a sending domain’s event (SPEC §20) goes out at once with the domain as data, to endpoints that want it', async () => {
    const tenant = `t-${suffix()}`;
    const all = await createEndpoint(pool, box, tenant, receiver.url(`/dom-all-${tenant}`));
    const domainsOnly = await createEndpoint(pool, box, tenant, receiver.url(`/dom-only-${tenant}`), [
      'domain.failed',
    ]);
    receiver.secrets.set(all.id, all.secret);
    const records = [
      {
        purpose: 'dkim' as const,
        type: 'TXT' as const,
        name: 'tern202606._domainkey.example.test',
        value: 'v=DKIM1; k=rsa; p=AAAA',
        status: 'verified' as const,
      },
    ];
    const event = domainEventSchema.parse({
      id: `dom_${suffix()}:verified:1`,
      type: 'domain.verified',
      tenantId: tenant,
      domainId: `dom_${suffix()}`,
      occurredAt: new Date().toISOString(),
      data: {
        name: 'example.test',
        status: 'verified',
        records,
        reason: null,
        verifiedAt: new Date().toISOString(),
      },
    });
    // No projection to wait for: nothing is written to email_logs for it.
    await createEventStream(log).append([event]);
    await waitFor(() => receiver.on(`/dom-all-${tenant}`).length >= 1, { timeoutMs: 20_000 });
    const got = receiver.on(`/dom-all-${tenant}`)[0]!;
    expect(got.verifiedBy).toEqual([all.id]);
    expect(got.headers['webhook-id']).toBe(event.id);
    expect(JSON.parse(got.body)).toEqual({
      type: 'domain.verified',
      timestamp: event.occurredAt,
      data: { domainId: event.domainId, tenantId: tenant, ...event.data },
    });
    expect(await deliveriesOf(domainsOnly.id)).toHaveLength(0);
  });
});

describe('retries', () => {
  it('retries after 500s with the same webhook-id and records every attempt (excerpt ≤ 1 KiB)', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/flaky-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    receiver.secrets.set(endpoint.id, endpoint.secret);
    receiver.reply = (r, n) =>
      r.path === path && n <= 2 ? { status: 500, body: 'x'.repeat(5000) } : { status: 200 };
    const [event] = emailEvents(tenant, 'em-4', [queued()]);
    await publish(log, pool, [event!]);
    await waitFor(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'delivered', {
      timeoutMs: 20_000,
      description: 'delivered after retries',
    });
    const got = receiver.on(path);
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([event!.id]));
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    expect(got.every((r) => r.verifiedBy.includes(endpoint.id))).toBe(true);
    const recorded = await attemptsOf(endpoint.id);
    expect(recorded.map((a) => a.status_code)).toEqual([500, 500, 200]);
    expect(recorded[0]!.error).toBe('HTTP 500');
    expect(recorded[0]!.response_excerpt).toBe('x'.repeat(1024));
    // Spaced by the schedule, not hammered, and not held until the claim's lease (2 s) ends.
    expect(got[1]!.receivedAt - got[0]!.receivedAt).toBeGreaterThanOrEqual(RETRIES[0]! - 20);
    expect(got[2]!.receivedAt - got[1]!.receivedAt).toBeLessThan(1_500);
  });

  it('a slow answer is a timeout; after the last scheduled retry the delivery is failed', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/slow-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    receiver.reply = (r) => (r.path === path ? { status: 200, delayMs: 1_500 } : { status: 200 });
    await publish(log, pool, emailEvents(tenant, 'em-5', [queued()]));
    await waitFor(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'failed', {
      timeoutMs: 30_000,
      description: 'failed after the schedule',
    });
    const recorded = await attemptsOf(endpoint.id);
    expect(recorded).toHaveLength(RETRIES.length + 1);
    expect(recorded.every((a) => a.status_code === null && /timeout after 400 ms/.test(a.error ?? ''))).toBe(
      true,
    );
    const { rows } = await pool.query('SELECT failing_since, enabled FROM webhook_endpoints WHERE id = $1', [
      endpoint.id,
    ]);
    expect(rows[0].failing_since).not.toBeNull();
    expect(rows[0].enabled).toBe(true);
  });

  it('a redirect is not followed: it counts as a failed attempt', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/moved-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    receiver.reply = (r, n) =>
      r.path === path && n === 1
        ? { status: 302, headers: { location: receiver.url('/elsewhere') } }
        : { status: 204 };
    await publish(log, pool, emailEvents(tenant, 'em-6', [queued()]));
    await waitFor(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'delivered', {
      timeoutMs: 20_000,
    });
    expect(receiver.on('/elsewhere')).toHaveLength(0);
    expect((await attemptsOf(endpoint.id)).map((a) => [a.status_code, a.error])).toEqual([
      [302, 'redirect 302 not followed'],
      [204, null],
    ]);
  });
});

describe('disabled endpoints', () => {
  it('an endpoint disabled by PATCH gets no deliveries; enabled again it gets the new events', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/off-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    await webhookStore.updateEndpoint(pool, tenant, endpoint.id, { enabled: false }, new Date());
    const marker = await createEndpoint(pool, box, tenant, receiver.url(`/marker-${tenant}`));
    await publish(log, pool, emailEvents(tenant, 'em-7', [queued()]));
    await waitFor(() => receiver.on(`/marker-${tenant}`).length === 1, { timeoutMs: 20_000 });
    expect(receiver.on(path)).toHaveLength(0);
    expect(await deliveriesOf(endpoint.id)).toHaveLength(0);
    expect(await deliveriesOf(marker.id)).toHaveLength(1);

    await webhookStore.updateEndpoint(pool, tenant, endpoint.id, { enabled: true }, new Date());
    await publish(log, pool, emailEvents(tenant, 'em-8', [queued()]));
    await waitFor(() => receiver.on(path).length === 1, { timeoutMs: 20_000 });
  });

  it('failing for 5 days disables the endpoint; its later events are not delivered', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/dead-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    receiver.reply = (r) => (r.path === path ? { status: 503 } : { status: 200 });
    // Its first failure was 5 days and a minute ago (the failure run began then).
    await pool.query(
      `UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`,
      [endpoint.id],
    );
    await publish(log, pool, emailEvents(tenant, 'em-9', [queued()]));
    await waitFor(
      async () =>
        (await pool.query('SELECT enabled FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0]
          .enabled === false,
      { timeoutMs: 20_000, description: 'endpoint disabled' },
    );
    const after = await webhookStore.getEndpoint(pool, tenant, endpoint.id);
    expect(after?.disabledReason).toMatch(/5 days/);
    // Pending retries of a disabled endpoint end without another attempt.
    await waitFor(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'failed', {
      timeoutMs: 20_000,
    });
    const attemptsBefore = receiver.on(path).length;
    const marker = await createEndpoint(pool, box, tenant, receiver.url(`/marker2-${tenant}`));
    await publish(log, pool, emailEvents(tenant, 'em-10', [queued()]));
    await waitFor(() => receiver.on(`/marker2-${tenant}`).length === 1, { timeoutMs: 20_000 });
    expect(await deliveriesOf(marker.id)).toHaveLength(1);
    expect(await deliveriesOf(endpoint.id)).toHaveLength(1);
    expect(receiver.on(path)).toHaveLength(attemptsBefore);
  });

  it('a healthy answer ends the failure run', async () => {
    const tenant = `t-${suffix()}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(`/heal-${tenant}`));
    await pool.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '1 day' WHERE id = $1`, [
      endpoint.id,
    ]);
    await publish(log, pool, emailEvents(tenant, 'em-11', [queued()]));
    await waitFor(
      async () => (await webhookStore.getEndpoint(pool, tenant, endpoint.id))?.failingSince === null,
      {
        timeoutMs: 20_000,
      },
    );
  });
});

describe('secrets sealed under another server key', () => {
  it('end the delivery at once with a clear reason, without an HTTP attempt or endless retries', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/sealed-${tenant}`;
    const endpoint = await createEndpoint(
      pool,
      createSecretBox('another-server-key-entirely'),
      tenant,
      receiver.url(path),
    );
    await publish(log, pool, emailEvents(tenant, 'em-sealed', [queued()]));
    await waitFor(async () => (await deliveriesOf(endpoint.id))[0]?.status === 'failed', {
      timeoutMs: 20_000,
    });
    const { rows } = await pool.query('SELECT last_error FROM webhook_deliveries WHERE endpoint_id = $1', [
      endpoint.id,
    ]);
    expect(rows[0].last_error).toMatch(/rotate the secret/);
    expect(receiver.on(path)).toHaveLength(0);
  });
});

describe('secret rotation', () => {
  it('for 24 h after a rotation both secrets sign; after the overlap only the new one', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/rotate-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    const { generateWebhookSecret } = await import('@tern/webhooks');
    const newSecret = generateWebhookSecret();
    await webhookStore.rotateSecret(
      pool,
      tenant,
      endpoint.id,
      box.encrypt(newSecret),
      new Date(),
      24 * 3_600_000,
    );
    receiver.secrets.set(`old-${tenant}`, endpoint.secret);
    receiver.secrets.set(`new-${tenant}`, newSecret);

    await publish(log, pool, emailEvents(tenant, 'em-12', [queued()]));
    await waitFor(() => receiver.on(path).length === 1, { timeoutMs: 20_000 });
    const during = receiver.on(path)[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(during.verifiedBy.sort()).toEqual([`new-${tenant}`, `old-${tenant}`]);

    // The overlap ends.
    await pool.query(
      `UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
      [endpoint.id],
    );
    await publish(log, pool, emailEvents(tenant, 'em-13', [queued()]));
    await waitFor(() => receiver.on(path).length === 2, { timeoutMs: 20_000 });
    const afterwards = receiver.on(path)[1]!;
    expect(String(afterwards.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(afterwards.verifiedBy).toEqual([`new-${tenant}`]);
  });
});

describe('replay', () => {
  it('re-reads the log and delivers the window’s events again with their original webhook-ids', async () => {
    const tenant = `t-${suffix()}`;
    const path = `/replay-${tenant}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(path));
    receiver.secrets.set(endpoint.id, endpoint.secret);
    const base = Date.now();
    const at = (offsetMs: number) => new Date(base + offsetMs).toISOString();
    const events = emailEvents(tenant, 'em-14', [
      { ...queued(), occurredAt: at(-3_000) },
      { type: 'email.sent', data: { provider: 'p', messageId: 'm' }, occurredAt: at(-2_000) },
      { type: 'email.delivered', occurredAt: at(-1_000) },
    ]);
    await publish(log, pool, events);
    await waitFor(() => receiver.on(path).length === 3, { timeoutMs: 20_000 });

    // Window: the last two events.
    await webhookStore.insertReplay(
      pool,
      tenant,
      {
        id: `rpl_${suffix()}`,
        endpointId: endpoint.id,
        since: new Date(base - 2_500),
        until: new Date(base),
      },
      new Date(),
    );
    await waitFor(() => receiver.on(path).length === 5, {
      timeoutMs: 40_000,
      description: 'replayed deliveries',
    });
    const replayed = receiver.on(path).slice(3);
    expect(replayed.map((r) => r.headers['webhook-id']).sort()).toEqual(
      [events[1]!.id, events[2]!.id].sort(),
    );
    expect(replayed.every((r) => r.verifiedBy.includes(endpoint.id))).toBe(true);
    await waitFor(
      async () =>
        (await pool.query(`SELECT status FROM webhook_replays WHERE endpoint_id = $1`, [endpoint.id])).rows[0]
          ?.status === 'done',
      { timeoutMs: 20_000 },
    );
    const rows = await deliveriesOf(endpoint.id);
    expect(rows.filter((d) => d.replay_id !== '')).toHaveLength(2);
    // The replayed body is the original one: same event, same email fields.
    const original = receiver.on(path).find((r) => r.headers['webhook-id'] === events[2]!.id)!;
    expect(JSON.parse(replayed.find((r) => r.headers['webhook-id'] === events[2]!.id)!.body)).toEqual(
      JSON.parse(original.body),
    );
  });
});

describe('record retention', () => {
  it('the sweep deletes finished deliveries (attempts cascade) older than the retention, never pending ones', async () => {
    const tenant = `t-${suffix()}`;
    const endpoint = await createEndpoint(pool, box, tenant, receiver.url(`/sweep-${tenant}`));
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, status,
         next_attempt_at, created_at, updated_at)
       VALUES ($1, $2, 'old-done', 'email.sent', 'em', '{}', 'delivered', now(), now() - interval '40 days', now() - interval '31 days'),
              ($1, $2, 'old-failed', 'email.sent', 'em', '{}', 'failed', now(), now() - interval '40 days', now() - interval '31 days'),
              ($1, $2, 'old-pending', 'email.sent', 'em', '{}', 'pending', now() + interval '1 day', now() - interval '40 days', now() - interval '31 days'),
              ($1, $2, 'recent-done', 'email.sent', 'em', '{}', 'delivered', now(), now(), now())
       RETURNING id`,
      [tenant, endpoint.id],
    );
    await pool.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code) VALUES ($1, 1, now(), 5, 200)`,
      [rows[0]!.id],
    );
    expect(await dispatcher.sweep()).toBeGreaterThanOrEqual(2);
    expect((await deliveriesOf(endpoint.id)).map((d) => d.event_id).sort()).toEqual([
      'old-pending',
      'recent-done',
    ]);
    expect(
      (await pool.query('SELECT 1 FROM webhook_attempts WHERE delivery_id = $1', [rows[0]!.id])).rowCount,
    ).toBe(0);
  });
});

describe('address checks at delivery time (DNS rebinding)', () => {
  it('without WEBHOOK_ALLOW_PRIVATE a loopback target is refused at connection time, literal or by name', async () => {
    const before = receiver.received.length;
    for (const url of [
      receiver.url('/blocked'),
      receiver.url('/blocked').replace('127.0.0.1', 'localhost'),
    ]) {
      const result = await postWebhook(url, { 'webhook-id': 'x' }, '{}', {
        timeoutMs: 1_000,
        allowPrivate: false,
      });
      expect(result.statusCode).toBeNull();
      expect(result.error).toMatch(/forbidden address|scheme not allowed/);
    }
    // https:// to a name resolving to loopback: the guarded lookup refuses before connecting.
    const https = await postWebhook('https://localhost:1/x', {}, '{}', {
      timeoutMs: 1_000,
      allowPrivate: false,
    });
    expect(https.error).toMatch(/forbidden address/);
    expect(receiver.received.length).toBe(before);
  });
});
