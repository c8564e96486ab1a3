import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, startTern, type TernProcess } from './tern-process.js';

const INGEST_TOKEN = 'ingest-cluster-e2e-token-0123456789abcdef';
const REQUESTS = 500;
const EVENTS_PER_REQUEST = 2;

const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);

/** POST over `agent` (one keep-alive socket); resolves with the status and the socket it used. */
function post(url: URL, agent: Agent, body: string): Promise<{ status: number; socket: object }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${INGEST_TOKEN}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket! }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const METRICS_TOKEN = 'ingest-cluster-e2e-metrics-token';
const accepted = (metrics: string): number => {
  const line = metrics.split('\n').find((l) => l.startsWith('ingest_events_accepted_total '));
  return Number(line?.split(' ')[1]);
};

/**
 * `npm run start:ingest` with two workers on one port (issue 32, item 3): one scrape of /metrics
 * counts every worker's events, and a keep-alive client does not stay with one worker for good.
 */
describe('the ingest cluster as one process: metrics and connection spread', () => {
  let db: { url: string; drop(): Promise<void> };
  let ingest: TernProcess | undefined;

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
  }, 120_000);
  afterAll(async () => {
    await ingest?.stop();
    await db?.drop();
  });

  it(`${REQUESTS} keep-alive requests reach both workers, and every scrape shows the sum of both`, async () => {
    ingest = await startTern({
      env: {
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        DATA_DIR: tempDir(),
        DATABASE_URL: db.url,
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        KAFKA_TOPIC: uniqueName('ingest-cluster'),
        KAFKA_PARTITIONS: '2',
        INGEST_WORKERS: '2',
        JWT_SECRET: 'ingest-cluster-e2e-jwt-secret-0123456789',
        INGEST_TOKEN,
        TRACKING_SECRET: 'ingest-cluster-e2e-tracking-secret',
        WEBHOOK_SECRETS_KEY: 'ingest-cluster-e2e-webhook-secrets-key',
        ENCRYPTION_KEY: 'ingest-cluster-e2e-encryption-key-0123456789ab',
        // Production serves /metrics only to the holder of METRICS_TOKEN.
        METRICS_TOKEN,
      },
      args: ['--services=ingest'],
    });
    const primary = ingest.child.pid!;
    await waitFor(async () => childrenOf(primary).length === 2, {
      timeoutMs: 60_000,
      description: 'two workers',
    });
    const workers = childrenOf(primary);
    // Both workers listening (the primary logs it once they all are).
    await waitFor(async () => ingest!.stdout().includes('ingest workers listening'), {
      timeoutMs: 60_000,
      description: 'workers listening',
    });

    const url = new URL(`${ingest.url}/events`);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<object>();
    const at = new Date().toISOString();
    for (let r = 0; r < REQUESTS; r++) {
      const events = Array.from({ length: EVENTS_PER_REQUEST }, (_, i) => ({
        id: `e${r}-${i}`,
        type: 'email.delivered',
        tenantId: 'cluster-tenant',
        emailId: `m${r}-${i}`,
        occurredAt: at,
      }));
      const res = await post(url, agent, JSON.stringify({ events }));
      expect(res.status).toBe(202);
      sockets.add(res.socket);
    }
    agent.destroy();

    // Whichever worker takes a scrape, it answers the whole cluster's count.
    const total = REQUESTS * EVENTS_PER_REQUEST;
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${ingest.url}/metrics`, {
        headers: { connection: 'close', authorization: `Bearer ${METRICS_TOKEN}` },
      });
      expect(res.status).toBe(200);
      expect(accepted(await res.text()), `scrape ${i}`).toBe(total);
    }

    // One keep-alive socket is renewed every 100 requests, and the connections are dealt out in turn.
    expect(sockets.size).toBeGreaterThanOrEqual(REQUESTS / 100);
    const perWorker = new Map<number, number>(workers.map((pid) => [pid, 0]));
    for (const line of ingest.stdout().split('\n')) {
      if (!line.includes('"request completed"') || !line.includes('"/events"')) continue;
      const pid = (JSON.parse(line) as { pid: number }).pid;
      perWorker.set(pid, (perWorker.get(pid) ?? 0) + 1);
    }
    const counts = [...perWorker.values()];
    expect(counts.reduce((a, b) => a + b, 0)).toBe(REQUESTS);
    for (const count of counts) expect(count, JSON.stringify(counts)).toBeGreaterThanOrEqual(REQUESTS * 0.2);
    expect(await ingest.stop()).toBe(0);
  }, 180_000);
});
