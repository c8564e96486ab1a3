import { rmSync } from 'node:fs';
import type { DeliveryEvent } from '@tern/contracts';
import { createKafkaEventLog, encodeRecords } from '@tern/event-log';
import { createClickHouse } from '@tern/stores';
import { describe, expect, it } from 'vitest';
import { startTern, type TernProcess } from '../e2e/tern-process.js';
import { tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { faultServers } from './setup.js';
import { compareWithOracle, duplicatesOf, generateStream, report, rng } from './stream.js';

/**
 * `kill -9` of the projector process at random points of a ≥ 100 000-event stream, several
 * times (FAULTS_KILL_EVENTS, FAULTS_KILLS), then Postgres and ClickHouse compared exactly with
 * the oracle. The worker is the built `tern --services=projector,api` on Kafka, the Postgres
 * server and its own embedded chDB directory (read back here once the worker has stopped).
 */
const EVENTS = Number(process.env.FAULTS_KILL_EVENTS ?? 100_000);
const KILLS = Number(process.env.FAULTS_KILLS ?? 3);
const SEED = Number(process.env.FAULTS_SEED ?? 9);
const quiet = { info() {}, warn() {}, error() {} };

describe('kill -9 of the projector during a large stream', () => {
  const servers = faultServers({ build: true });

  it(`${KILLS} × kill -9 at random points of ${EVENTS} events: 0 lost, 0 double-counted`, async () => {
    const { db, pool } = servers;
    const started = Date.now();
    const stream = generateStream({
      minEvents: EVENTS,
      tenants: 8,
      seed: SEED,
      prefix: `k9${Date.now() % 1e6}`,
    });
    const topic = uniqueName('faults-kill9');
    const log = createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic,
      partitions: 3,
      logger: quiet,
    });
    const all = [...stream.events, ...duplicatesOf(stream, 0.01, SEED + 1)];
    for (let i = 0; i < all.length; i += 1000)
      await log.append(encodeRecords(all.slice(i, i + 1000) as DeliveryEvent[]));

    const dataDir = tempDir('tern-faults-kill9-');
    const env = {
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: topic,
      KAFKA_PARTITIONS: '3',
      DATA_DIR: dataDir,
      NODE_ENV: 'development',
      LOG_LEVEL: 'error',
    };
    const start = () => startTern({ env, args: ['--services=projector,api'], readyTimeoutMs: 120_000 });
    const applied = async () =>
      Number(
        (await pool.query('SELECT coalesce(max(events_total), 0) AS n FROM projection_status')).rows[0]?.n ??
          0,
      );

    // Kill points: increasing random fractions of the stream, one per kill.
    const random = rng(SEED);
    const points = Array.from({ length: KILLS }, (_, k) =>
      Math.floor(EVENTS * ((k + 0.2 + 0.6 * random()) / (KILLS + 1))),
    );
    const killedAt: number[] = [];
    let worker: TernProcess | undefined;
    try {
      for (const point of points) {
        worker = await start();
        await waitFor(async () => (await applied()) >= point, {
          description: `projection past ${point}`,
          timeoutMs: 400_000,
          intervalMs: 25,
        });
        const exited = new Promise((r) => worker!.child.once('exit', r));
        worker.child.kill('SIGKILL');
        await exited;
        killedAt.push(await applied());
      }
      worker = await start();
      await waitFor(async () => (await log.lag('tern-projector')) === 0, {
        description: 'caught up after the kills',
        timeoutMs: 400_000,
        intervalMs: 200,
      });
      expect(await worker.stop()).toBe(0);
      worker = undefined;
    } finally {
      if (worker) worker.child.kill('SIGKILL');
      await log.close();
    }
    // The worker's ClickHouse, read in this process now that the worker is gone.
    const ch = createClickHouse({ dataDir });
    try {
      const c = await compareWithOracle(stream, pool, ch.client);
      report(
        `kill -9 × ${KILLS} of the projector`,
        stream.events.length,
        c,
        `duplicates=${all.length - stream.events.length} killedAtApplied=${killedAt.join(',')} seconds=${Math.round((Date.now() - started) / 1000)}`,
      );
      expect(c.diffs).toEqual([]);
      expect({ lost: c.lost, double: c.double }).toEqual({ lost: 0, double: 0 });
      expect(killedAt).toHaveLength(KILLS);
    } finally {
      await ch.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
