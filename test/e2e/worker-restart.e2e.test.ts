import { signDashboardToken } from '@tern/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, freePort, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'worker-restart-e2e-secret-0123456789abcdef';

/** The first pino line of `stdout` whose msg is `msg`. */
const logLine = (stdout: string, msg: string): Record<string, unknown> | undefined =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === msg);

/**
 * Issue 32, item 2: `npm run start:projector-api` (projector + api, and so the worker on chDB) after a kill -9, on the shared Kafka
 * broker and the Postgres server. The dead member keeps its place in the consumer group until its
 * session times out, so the new projector's join waits; the api must answer reads meanwhile.
 */
describe('start:projector-api restarted after kill -9: reads answer while the projector rejoins its group', () => {
  let db: { url: string; drop(): Promise<void> };
  let worker: TernProcess | undefined;

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await db?.drop();
  });

  it('the restarted api serves the projection, says it is catching up, then the projector resumes', async () => {
    const port = String(await freePort());
    const env = {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      PORT: port,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('worker-restart'),
      KAFKA_PARTITIONS: '2',
      JWT_SECRET,
      INGEST_TOKEN: 'worker-restart-e2e-ingest-token-0123456789',
      TRACKING_SECRET: 'worker-restart-e2e-tracking-secret',
      WEBHOOK_SECRETS_KEY: 'worker-restart-e2e-webhook-secrets-key',
      ENCRYPTION_KEY: 'worker-restart-e2e-encryption-key-0123456789ab',
      RATE_LIMIT_PER_MINUTE: '0',
    };
    const args = ['--services=projector,api'];
    const tenant = 'restart-tenant';
    const auth = {
      authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: tenant, role: 'owner', expiresInSeconds: 900 })}`,
    };
    const url = `http://127.0.0.1:${port}`;
    const logs = async () => {
      const res = await fetch(`${url}/emails/logs`, { headers: auth });
      return {
        status: res.status,
        asOf: res.headers.get('x-tern-as-of'),
        body: (await res.json()) as { data: unknown[] },
      };
    };
    const send = async (n: number) => {
      const res = await fetch(`${url}/emails/batch`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(
          Array.from({ length: n }, (_, i) => ({
            from: 'a@acme.test',
            to: 'delivered@sandbox.test',
            subject: `S${i}`,
            text: 'T',
          })),
        ),
      });
      expect(res.status).toBe(202);
    };

    // A first worker joins the group and projects three queued emails (no sender runs).
    worker = await startTern({ env: { ...env, DATA_DIR: tempDir() }, args });
    await send(3);
    await waitFor(async () => (await logs()).body.data.length === 3, {
      timeoutMs: 90_000,
      description: 'three emails projected',
    });

    worker.child.kill('SIGKILL');
    await new Promise((r) => worker!.child.once('exit', r));

    // Restarted: reads answer as soon as it listens, before the group has rejoined.
    const restartedAt = performance.now();
    worker = await startTern({ env: { ...env, DATA_DIR: tempDir() }, args });
    const first = await waitFor(
      async () => {
        const r = await logs().catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, description: 'a read answered' },
    );
    const readMs = Math.round(performance.now() - restartedAt);
    const ready = await fetch(`${url}/ready`);
    const joinedBeforeRead = logLine(worker.stdout(), 'projector joined its consumer group') !== undefined;
    expect(first.body.data).toHaveLength(3);
    expect(first.asOf).not.toBeNull();
    expect(joinedBeforeRead, `first read after ${readMs} ms came after the projector's join`).toBe(false);
    // Ready (a load balancer keeps sending reads), and it says the projection is catching up.
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: { projector: string } }).checks.projector).toMatch(
      /^catching up/,
    );

    const joined = await waitFor(
      async () => logLine(worker!.stdout(), 'projector joined its consumer group'),
      {
        timeoutMs: 90_000,
        description: 'the projector joined',
      },
    );
    const started = logLine(worker.stdout(), 'tern started')!;
    // startMs: start to listening; joinMs: the group join, which the listener no longer waits for.
    expect(started.startMs as number).toBeLessThan(joined.joinMs as number);
    console.info(
      `worker restart: startMs ${started.startMs}, first read ${readMs} ms, group joined after ${joined.joinMs} ms`,
    );

    // The projector works again: a new email is projected, /ready says ok.
    await send(1);
    await waitFor(async () => (await logs()).body.data.length === 4, {
      timeoutMs: 60_000,
      description: 'the fourth email projected',
    });
    expect(
      ((await (await fetch(`${url}/ready`)).json()) as { checks: { projector: string } }).checks.projector,
    ).toBe('ok');
    expect(await worker.stop()).toBe(0);
  }, 300_000);
});
