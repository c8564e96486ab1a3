import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import { createKafkaEventLog, type EventLog } from '@tern/event-log';
import { createSecretBox } from '@tern/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTern, startTern, type TernProcess } from '../../../test/e2e/tern-process.js';
import { tempDir, testServices, uniqueName, waitFor } from '../../../test/support/services.js';
import { type Receiver, startReceiver } from './receiver.js';
import { createEndpoint, emailEvents, openDatabase, publish, queued, suffix } from './support.js';

// The built process (`npm start` / `npm run start:dispatcher`), a real receiver on loopback that
// verifies with the reference `standardwebhooks` package, and a `kill -9` in the middle of an attempt.

let receiver: Receiver;
const procs: TernProcess[] = [];

beforeAll(async () => {
  buildTern();
  receiver = await startReceiver();
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.stop();
  await receiver?.close();
});

describe('dispatcher killed mid-delivery (kill -9)', () => {
  let db: Awaited<ReturnType<typeof openDatabase>>;
  let log: EventLog;
  const key = 'e2e-webhook-secrets-key-0123456789';

  beforeAll(async () => {
    db = await openDatabase();
  });
  afterAll(async () => {
    await log?.close();
    await db?.close();
  });

  it('the delivery in flight is made again by the next dispatcher, with the same webhook-id', async () => {
    const topic = uniqueName('dispatcher-kill');
    const env = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: topic,
      KAFKA_PARTITIONS: '2',
      JWT_SECRET: 'dispatcher-e2e-jwt-secret-0123456789',
      INGEST_TOKEN: 'dispatcher-e2e-ingest-token-0123456789abcdef',
      TRACKING_SECRET: 'dispatcher-e2e-tracking-secret-0123456789',
      WEBHOOK_SECRETS_KEY: key,
      ENCRYPTION_KEY: 'dispatcher-e2e-encryption-key-0123456789abcdef',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    const tenant = `kill-${suffix()}`;
    const path = `/kill-${tenant}`;
    const first = await startTern({ env: { ...env, DATA_DIR: tempDir() }, args: ['--services=dispatcher'] });
    procs.push(first);
    const endpoint = await createEndpoint(db.pool, createSecretBox(key), tenant, receiver.url(path));
    receiver.secrets.set(endpoint.id, endpoint.secret);
    // The first attempt never gets an answer: the dispatcher dies while it waits.
    receiver.reply = (r, n) => (r.path === path && n === 1 ? 'hang' : { status: 200 });

    log = createKafkaEventLog({ brokers: testServices().kafkaBrokers, topic, partitions: 2 });
    const [event] = emailEvents(tenant, 'em-kill', [queued('kill@example.com')]);
    await publish(log, db.pool, [event!]);

    await waitFor(() => receiver.on(path).length === 1, { timeoutMs: 60_000, description: 'first attempt' });
    first.child.kill('SIGKILL');
    await waitFor(() => first.child.exitCode !== null || first.child.signalCode !== null, {
      description: 'dispatcher killed',
    });

    const second = await startTern({ env: { ...env, DATA_DIR: tempDir() }, args: ['--services=dispatcher'] });
    procs.push(second);
    // Due again once the dead worker's lease (timeout 10 s + 5 s) ends.
    await waitFor(() => receiver.on(path).length === 2, {
      timeoutMs: 60_000,
      description: 'the retried attempt',
    });
    const [a, b] = receiver.on(path);
    expect(a!.headers['webhook-id']).toBe(event!.id);
    expect(b!.headers['webhook-id']).toBe(event!.id);
    expect(b!.body).toBe(a!.body);
    expect(a!.verifiedBy).toEqual([endpoint.id]);
    expect(b!.verifiedBy).toEqual([endpoint.id]);
    await waitFor(
      async () =>
        (await db.pool.query(`SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint.id]))
          .rows[0]?.status === 'delivered',
      { timeoutMs: 20_000 },
    );
    // Nothing more: one event, one delivery, at most the in-flight attempt repeated.
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.on(path)).toHaveLength(2);
  }, 150_000);
});

describe('all-in-one (`npm start`, embedded stores)', () => {
  it('a webhook created through the API receives signed deliveries within 2 s of an event, and of a sandbox send', async () => {
    const dataDir = tempDir();
    const tern = await startTern({ env: { DATA_DIR: dataDir } });
    procs.push(tern);
    const dev = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8'));
    expect(dev.webhookSecretsKey).toBeTruthy();
    const jwt = signDashboardToken({
      secret: dev.jwtSecret,
      tenantId: 'demo',
      role: 'owner',
      expiresInSeconds: 600,
    });
    const path = `/aio-${suffix()}`;
    const created = await fetch(`${tern.url}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url(path), events: ['email.queued', 'email.delivered'] }),
    });
    expect(created.status).toBe(201);
    const webhook = (await created.json()) as { id: string; secret: string };
    receiver.secrets.set(webhook.id, webhook.secret);

    const now = new Date().toISOString();
    const sentAt = Date.now();
    const res = await fetch(`${tern.url}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dev.ingestToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        events: [
          {
            id: 'aio-q',
            type: 'email.queued',
            tenantId: 'demo',
            emailId: 'aio-1',
            occurredAt: now,
            data: { toEmail: 'a@example.com', subject: 'Hi' },
          },
          {
            id: 'aio-s',
            type: 'email.sent',
            tenantId: 'demo',
            emailId: 'aio-1',
            occurredAt: now,
            data: { provider: 'p', messageId: 'm' },
          },
          { id: 'aio-d', type: 'email.delivered', tenantId: 'demo', emailId: 'aio-1', occurredAt: now },
        ],
      }),
    });
    expect(res.status).toBe(202);
    await waitFor(() => receiver.on(path).length === 2, { timeoutMs: 10_000, description: 'two deliveries' });
    const got = receiver.on(path);
    expect(got.map((r) => r.headers['webhook-id']).sort()).toEqual(['aio-d', 'aio-q']);
    expect(got.every((r) => r.verifiedBy.includes(webhook.id))).toBe(true);
    expect(Math.max(...got.map((r) => r.receivedAt)) - sentAt).toBeLessThan(2_000);

    const deliveries = await fetch(`${tern.url}/webhooks/${webhook.id}/deliveries`, {
      headers: { authorization: `Bearer ${jwt}` },
    });
    expect(deliveries.status).toBe(200);
    expect(((await deliveries.json()) as { meta: { total: number } }).meta.total).toBe(2);
    const metrics = await (await fetch(`${tern.url}/metrics`)).text();
    expect(metrics).toMatch(/^dispatcher_attempts_total\{outcome="delivered"\} 2$/m);
    expect(metrics).toMatch(/^dispatcher_lag_events \d+$/m);

    // Issue 13 done-when: a sandbox send (`POST /emails/send` → sender → sandbox provider) reaches
    // the same endpoint as signed `email.queued` and `email.delivered` deliveries within 2 s.
    const sendAt = Date.now();
    const send = await fetch(`${tern.url}/emails/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'Acme <hello@acme.test>',
        to: 'delivered@sandbox.test',
        subject: 'Webhook e2e',
        text: 'Hello',
      }),
    });
    expect(send.status).toBe(202);
    const { id: emailId } = (await send.json()) as { id: string };
    const ofSend = () =>
      receiver
        .on(path)
        .map((r) => ({ r, body: JSON.parse(r.body) as { type: string; data: Record<string, unknown> } }))
        .filter(({ body }) => body.data.emailId === emailId);
    await waitFor(() => ofSend().some(({ body }) => body.type === 'email.delivered'), {
      timeoutMs: 10_000,
      description: 'the sandbox send delivered to the webhook',
    });
    const sendDeliveries = ofSend();
    // Only the subscribed types (email.sent is not one), each once, each signed.
    expect(sendDeliveries.map(({ body }) => body.type).sort()).toEqual(['email.delivered', 'email.queued']);
    expect(sendDeliveries.every(({ r }) => r.verifiedBy.includes(webhook.id))).toBe(true);
    const delivered = sendDeliveries.find(({ body }) => body.type === 'email.delivered')!;
    expect(delivered.body.data).toMatchObject({
      emailId,
      tenantId: 'demo',
      to: 'delivered@sandbox.test',
      subject: 'Webhook e2e',
      status: 'DELIVERED',
    });
    expect(delivered.r.receivedAt - sendAt).toBeLessThan(2_000);
  }, 120_000);
});
