import { rmSync } from 'node:fs';
import { signDashboardToken } from '@tern/auth';
import type { DeliveryEvent } from '@tern/contracts';
import { createKafkaEventLog, encodeRecords } from '@tern/event-log';
import { describe, expect, it } from 'vitest';
import { startTern, type TernProcess } from '../e2e/tern-process.js';
import { tempDir, uniqueName, waitFor } from '../support/services.js';
import { faultServers } from './setup.js';
import { generateStream } from './stream.js';

/**
 * Issue 49, item 3: `kill -9` of `tern --services=projector,api` (the process of `npm run
 * start:projector-api`, embedded chDB) while a backlog waits in the log, then a restart under read
 * load (4 dashboard clients: the logs list from Postgres, the summary from ClickHouse). The reads'
 * p99 while the restarted projector folds the backlog in the same process is printed and asserted
 * against a generous bound (P99_BOUND_MS); so is the pause from `/health` to the first projected
 * event (item 4's session wait is bounded in consumer-restart.faults.test.ts).
 */
const WARM = 4_000;
const BACKLOG = Number(process.env.FAULTS_CATCHUP_EVENTS ?? 40_000);
const P99_BOUND_MS = Number(process.env.FAULTS_READ_P99_MS ?? 2_500);
const JWT_SECRET = 'faults-restart-jwt-secret-0123456789abcdef';
const quiet = { info() {}, warn() {}, error() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

describe('kill -9 of projector-api with a backlog, restarted under read load', () => {
  // A broker of this test's own: the group `tern-projector` has only this test's members.
  const servers = faultServers({ build: true, broker: true });

  it(`${BACKLOG} events waiting: reads keep p99 ≤ ${P99_BOUND_MS} ms while the restarted projector folds them`, async () => {
    const { broker, db, pool } = servers;
    const stream = generateStream({
      minEvents: WARM + BACKLOG,
      tenants: 4,
      seed: 49,
      prefix: `rs${Date.now() % 1e6}`,
    });
    const topic = uniqueName('faults-restart');
    const log = createKafkaEventLog({
      brokers: broker.brokers,
      topic,
      partitions: 3,
      logger: quiet,
    });
    const append = async (events: readonly unknown[]) => {
      for (let i = 0; i < events.length; i += 1000)
        await log.append(encodeRecords(events.slice(i, i + 1000) as DeliveryEvent[]));
    };
    const dataDir = tempDir('tern-faults-restart-');
    const env = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_TOPIC: topic,
      KAFKA_PARTITIONS: '3',
      DATA_DIR: dataDir,
      NODE_ENV: 'development',
      LOG_LEVEL: 'error',
      JWT_SECRET,
      // The readers run for as long as the fold lasts (≈ 80 requests/s): a slow fold would pass
      // the limiter's 1 200 per minute, and a 429 is the limiter working, not a read failing.
      RATE_LIMIT_PER_MINUTE: '0',
    };
    const start = () => startTern({ env, args: ['--services=projector,api'], readyTimeoutMs: 120_000 });
    const applied = async () =>
      Number(
        (await pool.query('SELECT coalesce(max(events_total), 0) AS n FROM projection_status')).rows[0]?.n ??
          0,
      );
    const jwt = signDashboardToken({
      secret: JWT_SECRET,
      tenantId: stream.tenants[0]!,
      role: 'owner',
      expiresInSeconds: 3600,
    });
    let worker: TernProcess | undefined;
    try {
      await append(stream.events.slice(0, WARM));
      worker = await start();
      await waitFor(async () => (await applied()) >= WARM, {
        description: 'the first events projected',
        timeoutMs: 240_000,
        intervalMs: 100,
      });
      const exited = new Promise((r) => worker!.child.once('exit', r));
      worker.child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      const before = await applied();
      await append(stream.events.slice(WARM));

      const spawned = Date.now();
      worker = await start();
      const ready = Date.now();
      const url = worker.url;
      // Read load: 4 clients, each a read then 50 ms, until the backlog is folded.
      const latencies: number[] = [];
      const byPath = new Map<string, number[]>();
      const statuses: Record<number, number> = {};
      let reading = true;
      const client = async (k: number) => {
        for (let i = 0; reading; i++) {
          const path = (i + k) % 2 === 0 ? '/emails/logs?limit=20' : '/analytics/summary';
          const t = performance.now();
          try {
            const res = await fetch(`${url}${path}`, {
              headers: { authorization: `Bearer ${jwt}` },
              signal: AbortSignal.timeout(60_000),
            });
            await res.arrayBuffer();
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          } catch {
            statuses[0] = (statuses[0] ?? 0) + 1;
          }
          const took = performance.now() - t;
          latencies.push(took);
          byPath.set(path, [...(byPath.get(path) ?? []), took]);
          await sleep(50);
        }
      };
      const readers = Promise.all([0, 1, 2, 3].map(client));
      let resumed = 0;
      try {
        await waitFor(async () => (await applied()) > before, {
          description: 'projection resumed after the restart',
          timeoutMs: 120_000,
          intervalMs: 100,
        });
        resumed = Date.now();
        await waitFor(async () => (await applied()) >= WARM + BACKLOG, {
          description: 'the backlog folded',
          timeoutMs: 400_000,
          intervalMs: 200,
        });
      } finally {
        reading = false;
        await readers;
      }
      const caughtUp = Date.now();
      const sorted = [...latencies].sort((a, b) => a - b);
      const pauseS = (resumed - ready) / 1000;
      const p50 = quantile(sorted, 0.5);
      const p99 = quantile(sorted, 0.99);
      console.log(
        `[faults] kill -9 of projector-api, ${BACKLOG} events waiting: restart ready ${((ready - spawned) / 1000).toFixed(1)} s after spawn ` +
          `(${((ready - killedAt) / 1000).toFixed(1)} s after the kill); rebalance pause ${pauseS.toFixed(1)} s (ready → first event projected); ` +
          `catch-up ${((caughtUp - resumed) / 1000).toFixed(1)} s; reads during it n=${sorted.length} ` +
          `p50=${p50.toFixed(0)} ms p99=${p99.toFixed(0)} ms max=${(sorted.at(-1) ?? 0).toFixed(0)} ms statuses=${JSON.stringify(statuses)} ` +
          [...byPath]
            .map(
              ([path, l]) =>
                `${path.split('?')[0]} p99=${quantile(
                  [...l].sort((a, b) => a - b),
                  0.99,
                ).toFixed(0)} ms`,
            )
            .join(' '),
      );
      expect(statuses[200]).toBeGreaterThan(0);
      expect(Object.keys(statuses)).toEqual(['200']);
      expect(p99, 'read p99 during the catch-up (ms)').toBeLessThanOrEqual(P99_BOUND_MS);
      expect(await worker.stop()).toBe(0);
      worker = undefined;
    } finally {
      if (worker) worker.child.kill('SIGKILL');
      await log.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
