import { existsSync, readFileSync } from 'node:fs';
import { signDashboardToken } from '@tern/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, freePort, runTernToExit, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'split-e2e-secret-0123456789abcdef';
const INGEST_TOKEN = 'split-e2e-ingest-token-0123456789abcdef';
const TRACKING_SECRET = 'split-e2e-tracking-secret-0123456789';
const WEBHOOK_SECRETS_KEY = 'split-e2e-webhook-secrets-key-0123456789';

/** The child processes of `pid` (Linux /proc). */
const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);

/**
 * Split mode on this machine (no ClickHouse server): two ingest processes alone, and projector +
 * api together in a third process (embedded chDB), on the real Kafka broker and Postgres server.
 */
describe('split mode: services as separate processes on Kafka and a Postgres server', () => {
  let db: { url: string; drop(): Promise<void> };
  const procs: TernProcess[] = [];
  let common: Record<string, string>;

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
    common = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('split-events'),
      KAFKA_PARTITIONS: '3',
      JWT_SECRET,
      INGEST_TOKEN,
      TRACKING_SECRET,
      WEBHOOK_SECRETS_KEY,
      ENCRYPTION_KEY: 'split-e2e-encryption-key-0123456789abcdef',
    };
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) await p.stop();
    await db?.drop();
  });

  it('events posted to either ingest process are read back from the api process', async () => {
    // A: INGEST_WORKERS=2, one port served by two forked workers (node:cluster); B: one process.
    const ingestA = await startTern({
      env: { ...common, DATA_DIR: tempDir(), INGEST_WORKERS: '2' },
      args: ['--services=ingest'],
    });
    procs.push(ingestA);
    const ingestB = await startTern({
      env: { ...common, DATA_DIR: tempDir(), INGEST_WORKERS: '1' },
      args: ['--services=ingest'],
    });
    procs.push(ingestB);
    await waitFor(async () => childrenOf(ingestA.child.pid!).length === 2, {
      timeoutMs: 60_000,
      description: 'two ingest workers forked',
    });
    expect(childrenOf(ingestB.child.pid!)).toEqual([]);
    const port = String(await freePort());
    const worker = await startTern({
      env: { ...common, DATA_DIR: tempDir(), PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}` },
      args: ['--services=projector,api'],
    });
    procs.push(worker);

    const tenant = 'split-tenant';
    const at = new Date().toISOString();
    for (const [i, ingest] of [ingestA, ingestB].entries()) {
      const res = await fetch(`${ingest.url}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          events: [
            {
              id: `q${i}`,
              type: 'email.queued',
              tenantId: tenant,
              emailId: `m${i}`,
              occurredAt: at,
              data: { toEmail: 'a@example.com', subject: 'S' },
            },
            { id: `d${i}`, type: 'email.delivered', tenantId: tenant, emailId: `m${i}`, occurredAt: at },
          ],
        }),
      });
      expect(res.status).toBe(202);
    }
    // Ingest alone serves no query route.
    expect((await fetch(`${ingestA.url}/emails/logs`)).status).toBe(404);

    const jwt = signDashboardToken({
      secret: JWT_SECRET,
      tenantId: tenant,
      role: 'owner',
      expiresInSeconds: 600,
    });
    const logs = await waitFor(
      async () => {
        const res = await fetch(`${worker.url}/emails/logs`, { headers: { authorization: `Bearer ${jwt}` } });
        const body = (await res.json()) as { data: { id: string; status: string }[] };
        return body.data.length === 2 && body.data.every((d) => d.status === 'DELIVERED') ? body : undefined;
      },
      // A bound, not a timing assertion: a consumer group joining a busy broker may wait out a rebalance.
      { timeoutMs: 90_000, description: 'both emails delivered' },
    );
    expect(logs.data.map((d) => d.id).sort()).toEqual(['m0', 'm1']);
    // Analytics follow the log through the outbox: poll until they have caught up (bounded).
    const sent = await waitFor(
      async () => {
        const summary = await fetch(`${worker.url}/analytics/summary`, {
          headers: { authorization: `Bearer ${jwt}` },
        });
        const n = ((await summary.json()) as { totals: { sent: number } }).totals.sent;
        return n === 2 ? n : undefined;
      },
      { timeoutMs: 30_000, description: 'analytics caught up' },
    );
    expect(sent).toBe(2);
    const workersOfA = childrenOf(ingestA.child.pid!);
    for (const p of [ingestA, ingestB, worker]) expect(await p.stop()).toBe(0);
    // The primary exits only once its workers have.
    for (const pid of workersOfA) expect(existsSync(`/proc/${pid}`)).toBe(false);
  }, 240_000);

  it('npm run start:sender: two sender processes on Kafka deliver what the api process queued, each once; a click link reaches the api and lands on the timeline', async () => {
    // PUBLIC_URL is the api's address (in production a split-mode sender refuses to start without it).
    const port = String(await freePort());
    const publicUrl = `http://127.0.0.1:${port}`;
    const topic = { KAFKA_TOPIC: uniqueName('split-send'), PUBLIC_URL: publicUrl };
    const worker = await startTern({
      env: { ...common, ...topic, DATA_DIR: tempDir(), PORT: port },
      args: ['--services=projector,api'],
    });
    procs.push(worker);
    const senders = [];
    for (let i = 0; i < 2; i++) {
      const sender = await startTern({
        env: { ...common, ...topic, DATA_DIR: tempDir() },
        args: ['--services=sender'],
      });
      procs.push(sender);
      senders.push(sender);
    }
    const tenant = 'split-send-tenant';
    const auth = {
      authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: tenant, role: 'owner', expiresInSeconds: 600 })}`,
    };
    const res = await fetch(`${worker.url}/emails/batch`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(
        Array.from({ length: 10 }, (_, i) => ({
          from: 'hello@acme.test',
          to: i === 0 ? 'bounced@sandbox.test' : 'delivered@sandbox.test',
          subject: `S${i}`,
          text: 'T',
          ...(i === 1
            ? { html: '<p>See <a href="https://example.com/offer?a=1&amp;b=2">the offer</a></p>' }
            : {}),
        })),
      ),
    });
    expect(res.status).toBe(202);
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((d) => d.id);
    for (const [i, id] of ids.entries()) {
      const email = await waitFor(
        async () => {
          const r = await fetch(`${worker.url}/emails/${id}`, { headers: auth });
          const body = (await r.json()) as { status: string; events: { type: string }[] };
          return body.status === (i === 0 ? 'BOUNCED' : 'DELIVERED') ? body : undefined;
        },
        { timeoutMs: 90_000, description: `${id} final` },
      );
      expect(email.events.filter((e) => e.type === 'email.sent')).toHaveLength(1);
    }

    // The sender wrote the click link; it points at the api (PUBLIC_URL), which redirects and counts.
    const content = (await (
      await fetch(`${worker.url}/emails/${ids[1]}/content`, { headers: auth })
    ).json()) as {
      html: string;
    };
    const link = /<a href="([^"]+)">the offer/.exec(content.html)?.[1];
    expect(link?.startsWith(`${publicUrl}/t/c/`), link).toBe(true);
    const click = await fetch(link!, {
      redirect: 'manual',
      headers: { 'user-agent': 'Mozilla/5.0 split-e2e' },
    });
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://example.com/offer?a=1&b=2');
    const clicked = await waitFor(
      async () => {
        const r = await fetch(`${worker.url}/emails/${ids[1]}`, { headers: auth });
        const body = (await r.json()) as {
          clicks: number;
          events: { type: string; data?: { url?: string } }[];
        };
        return body.clicks === 1 ? body : undefined;
      },
      { timeoutMs: 60_000, description: 'the click on the timeline' },
    );
    expect(clicked.events.find((e) => e.type === 'email.clicked')?.data?.url).toBe(
      'https://example.com/offer?a=1&b=2',
    );
    for (const p of [worker, ...senders]) expect(await p.stop()).toBe(0);
  }, 300_000);

  it('a service that would need an embedded store of another process refuses to start, in one line', async () => {
    const projectorAlone = await runTernToExit({ ...common, DATA_DIR: tempDir() }, ['--services=projector']);
    expect(projectorAlone.code).toBe(1);
    expect(projectorAlone.stderr.trim().split('\n')).toEqual([expect.stringContaining('CLICKHOUSE_URL')]);
    const { DATABASE_URL: _omit, ...withoutDb } = common;
    const apiAlone = await runTernToExit({ ...withoutDb, DATA_DIR: tempDir() }, ['--services=ingest']);
    expect(apiAlone.code).toBe(1);
    expect(apiAlone.stderr.trim().split('\n')).toEqual([expect.stringContaining('DATABASE_URL')]);
    // A process that writes links does not guess its own address in production (issue 32).
    for (const role of ['sender', 'projector,api']) {
      const noPublicUrl = await runTernToExit({ ...common, DATA_DIR: tempDir() }, [`--services=${role}`]);
      expect(noPublicUrl.code, role).toBe(1);
      expect(noPublicUrl.stderr.trim().split('\n'), role).toEqual([
        expect.stringMatching(/^Invalid configuration: PUBLIC_URL must be set in production/),
      ]);
    }
  }, 60_000);
});
