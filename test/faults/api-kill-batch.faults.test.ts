import { rmSync } from 'node:fs';
import { signDashboardToken } from '@tern/auth';
import { describe, expect, it } from 'vitest';
import { startTern, type TernProcess } from '../e2e/tern-process.js';
import { tempDir, uniqueName, waitFor } from '../support/services.js';
import { faultServers } from './setup.js';

/**
 * Issue 49, item 2: `kill -9` of the api (`tern --services=projector,api`, the process of
 * `start:projector-api`) while `POST /emails/batch` requests with an Idempotency-Key are in
 * flight, next to a sender process (`--services=sender`),
 * on a broker of the test's own. To catch every request between writing its rows and its answer,
 * the broker is frozen (SIGSTOP) while they run, the api killed, the broker thawed (SIGCONT): an
 * append the broker had read goes through after the api died, the others never happen. Then:
 * - the rows of requests whose email.queued never reached the log are swept (none left
 *   `awaiting_log`), and
 * - each batch retried with its key gets a 202: the answer of the dead request when the log holds
 *   its email.queued, else a fresh run — every batch's 10 emails sent exactly once, never twice.
 */
const BATCHES = 6;
const PER_BATCH = 10;
const JWT_SECRET = 'faults-batch-jwt-secret-0123456789abcdef';
const TENANT = 'faults-batch-tenant';

describe('kill -9 of the api during POST /emails/batch', () => {
  const servers = faultServers({ build: true, broker: true });

  it(`${BATCHES} batches in flight: no row left awaiting the log, each key answered, each email sent once`, async () => {
    const { broker, db, pool } = servers;
    const common = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_TOPIC: uniqueName('faults-batch'),
      KAFKA_PARTITIONS: '3',
      NODE_ENV: 'development',
      LOG_LEVEL: 'error',
      JWT_SECRET,
      WEBHOOK_SECRETS_KEY: 'faults-batch-webhook-secrets-key-0123456',
      ENCRYPTION_KEY: 'faults-batch-encryption-key-0123456789abcd',
    };
    const apiDir = tempDir('tern-faults-batch-api-');
    const senderDir = tempDir('tern-faults-batch-sender-');
    const startApi = () =>
      startTern({
        env: { ...common, DATA_DIR: apiDir },
        args: ['--services=projector,api'],
        readyTimeoutMs: 120_000,
      });
    const auth = {
      authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: TENANT, role: 'owner', expiresInSeconds: 3600 })}`,
      'content-type': 'application/json',
    };
    const bodyOf = (b: number) =>
      JSON.stringify(
        Array.from({ length: PER_BATCH }, (_, i) => ({
          from: 'hello@acme.test',
          to: `b${b}-r${i}@example.com`,
          subject: `batch ${b}`,
          text: 'T',
        })),
      );
    const post = (url: string, b: number) =>
      fetch(`${url}/emails/batch`, {
        method: 'POST',
        headers: { ...auth, 'idempotency-key': `faults-batch-${b}` },
        body: bodyOf(b),
        signal: AbortSignal.timeout(60_000),
      });
    const count = async (where: string) =>
      Number((await pool.query(`SELECT count(*) AS n FROM outgoing_emails WHERE ${where}`)).rows[0].n);
    let api: TernProcess | undefined;
    let sender: TernProcess | undefined;
    const t0 = Date.now();
    const at = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
    const timeline: string[] = [];
    try {
      [api, sender] = await Promise.all([
        startApi(),
        startTern({
          env: { ...common, DATA_DIR: senderDir },
          args: ['--services=sender'],
          readyTimeoutMs: 120_000,
        }),
      ]);
      // `startTern` waits for `/health`; the api's log connects lazily, and `/ready` checks it. A
      // freeze before that connection would hang the batches' first append (503, no rows written),
      // so the freeze waits for `/ready`.
      await waitFor(async () => (await fetch(`${api!.url}/ready`)).ok, {
        description: 'the api ready (its event log connected)',
        timeoutMs: 60_000,
        intervalMs: 200,
      });
      // Freeze the broker, start the batches, kill the api once every batch has written its rows.
      const brokerPid = broker.pid()!;
      process.kill(brokerPid, 'SIGSTOP');
      timeline.push(`frozen@${at()}`);
      const url = api.url;
      const before = new Set<string>();
      // What each request came to before the kill (an answer here means it did not wait on the log).
      const early: string[] = [];
      const inFlight = Array.from({ length: BATCHES }, (_, b) =>
        post(url, b).then(
          (r) => void early.push(`batch ${b}: ${r.status} @${at()}`),
          (err: Error) => void early.push(`batch ${b}: ${err.cause ?? err.message} @${at()}`),
        ),
      );
      try {
        await waitFor(
          async () => {
            const { rows } = await pool.query<{ state: string; n: number }>(
              'SELECT state, count(*)::int AS n FROM outgoing_emails GROUP BY state',
            );
            if (rows.find((r) => r.state === 'awaiting_log')?.n === BATCHES * PER_BATCH) return true;
            throw new Error(`rows by state ${JSON.stringify(rows)}; answered: ${early.join(', ') || 'none'}`);
          },
          {
            description: 'every batch wrote its rows',
            timeoutMs: 60_000,
            intervalMs: 50,
          },
        );
        const exited = new Promise((r) => api!.child.once('exit', r));
        api.child.kill('SIGKILL');
        await exited;
        timeline.push(`killed@${at()}`);
        for (const r of (await pool.query<{ id: string }>('SELECT id FROM outgoing_emails')).rows)
          before.add(r.id);
      } finally {
        process.kill(brokerPid, 'SIGCONT');
      }
      await Promise.all(inFlight);
      const debris = await count(`state = 'awaiting_log'`);
      timeline.push(`thawed@${at()}`);

      // Restarted; each client retries its batch with its key until it gets its answer.
      api = await startApi();
      timeline.push(`restarted@${at()}`);
      const statuses: Record<number, number> = {};
      const answers = await Promise.all(
        Array.from({ length: BATCHES }, async (_, b) => {
          const deadline = Date.now() + 150_000;
          for (;;) {
            const res = await post(api!.url, b);
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
            if (res.status === 202)
              return ((await res.json()) as { data: { id: string }[] }).data.map((d) => d.id);
            expect([409, 503], await res.text()).toContain(res.status);
            expect(Date.now(), `batch ${b} still unanswered`).toBeLessThan(deadline);
            await new Promise((r) => setTimeout(r, 1000));
          }
        }),
      );
      timeline.push(`answered@${at()}`);
      // Every answered email sent; nothing else sent; nothing left awaiting the log.
      const answered = answers.flat();
      await waitFor(
        async () =>
          (await count(`id = ANY('{${answered.join(',')}}'::text[]) AND state = 'done'`)) ===
            answered.length && (await count(`state = 'awaiting_log'`)) === 0,
        {
          description: 'every answered email sent and the debris swept',
          timeoutMs: 120_000,
          intervalMs: 500,
        },
      );
      timeline.push(`settled@${at()}`);
      const { rows } = await pool.query<{ subject: string; n: string }>(
        `SELECT message->>'subject' AS subject, count(*) AS n FROM outgoing_emails
          WHERE state NOT IN ('awaiting_log') GROUP BY 1 ORDER BY 1`,
      );
      const perBatch = Object.fromEntries(rows.map((r) => [r.subject, Number(r.n)]));
      // A key resolved to the dead request's answer (the log held its email.queued), or ran afresh.
      const resolved = answers.filter((ids) => ids.every((id) => before.has(id))).length;
      console.log(
        `[faults] kill -9 of the api with ${BATCHES} batches in flight (broker frozen): debris rows after the kill=${debris}, ` +
          `retries=${JSON.stringify(statuses)} rowsSentPerBatch=${JSON.stringify(perBatch)} keysResolvedToTheDeadRequest=${resolved} keysRunAfresh=${BATCHES - resolved} ` +
          `timeline=${timeline.join(',')}`,
      );
      expect(debris).toBeGreaterThan(0);
      expect(perBatch).toEqual(
        Object.fromEntries(Array.from({ length: BATCHES }, (_, b) => [`batch ${b}`, PER_BATCH])),
      );
      expect(new Set(answered).size).toBe(BATCHES * PER_BATCH);
    } finally {
      for (const p of [api, sender]) if (p) await p.stop().catch(() => p.child.kill('SIGKILL'));
      rmSync(apiDir, { recursive: true, force: true });
      rmSync(senderDir, { recursive: true, force: true });
    }
  });
});
