import { rmSync } from 'node:fs';
import type { DeliveryEvent } from '@tern/contracts';
import { createEventStream, createKafkaEventLog, encodeRecords } from '@tern/event-log';
import { createProjector } from '@tern/projector';
import { createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { type DedicatedPostgres, portOpen, processAlive, startDedicatedPostgres } from './servers.js';
import { compareWithOracle, duplicatesOf, generateStream, report } from './stream.js';

/**
 * A real Postgres server restarted twice under a projecting projector: `pg_ctl restart -m fast`
 * (sessions terminated, a clean shutdown) at ~30 % of the stream, then `pg_ctl stop -m immediate`
 * (a crash: the server starts again through WAL recovery) held down 3 s, at ~60 %. The server
 * is this test's own (initdb into a temp dir, its own port); the machine's Postgres is untouched.
 * Ends with Postgres and ClickHouse compared exactly with the oracle of stream.ts.
 */
const EVENTS = Number(process.env.FAULTS_EVENTS ?? 20_000);
const DOWN_MS = 3000;
const quiet = { info() {}, warn() {}, error() {} };

describe('Postgres restarted during projection (a dedicated server)', () => {
  let server: DedicatedPostgres;
  let direct: pg.Pool;

  beforeAll(async () => {
    server = await startDedicatedPostgres();
    direct = new pg.Pool({ connectionString: server.url, max: 2 });
    direct.on('error', () => undefined);
    await migratePostgres(direct);
  }, 180_000);
  afterAll(async () => {
    await direct?.end().catch(() => undefined);
    await server?.destroy();
  });

  it('pg_ctl restart -m fast, then stop -m immediate + start, mid-projection: 0 lost, 0 double-counted', async () => {
    const stream = generateStream({
      minEvents: EVENTS,
      tenants: 4,
      seed: 11,
      prefix: `pgr${Date.now() % 1e6}`,
    });
    const log = createKafkaEventLog({
      brokers: testServices().kafkaBrokers,
      topic: uniqueName('faults-pg'),
      partitions: 3,
      logger: quiet,
    });
    const chDir = tempDir('tern-faults-pg-ch-');
    const ch = createClickHouse({ dataDir: chDir });
    await migrateClickHouse(ch.client);
    const pool = new pg.Pool({ connectionString: server.url, max: 4, connectionTimeoutMillis: 2000 });
    pool.on('error', () => undefined);
    let retries = 0;
    const group = uniqueName('faults-pg-group');
    const projector = createProjector({
      pool,
      ch: ch.client,
      log: createEventStream(log),
      group,
      maxBatchSize: 2000,
      retry: { initialMs: 50, maxMs: 500 },
      logger: {
        info() {},
        warn: (_o: object, m?: string) => {
          if (m?.includes('retrying')) retries++;
        },
        error() {},
      },
    });
    const applied = async () =>
      Number(
        (await direct.query('SELECT coalesce(max(events_total), 0) AS n FROM projection_status')).rows[0].n,
      );
    const outages: string[] = [];
    try {
      const all = [...stream.events, ...duplicatesOf(stream, 0.02, 12)];
      for (let i = 0; i < all.length; i += 1000)
        await log.append(encodeRecords(all.slice(i, i + 1000) as DeliveryEvent[]));
      await projector.start();

      // 1. A clean restart: sessions terminated, in-flight transaction rolled back.
      await waitFor(async () => (await applied()) > EVENTS * 0.3, {
        description: '30 % projected',
        timeoutMs: 300_000,
        intervalMs: 20,
      });
      const pid1 = server.pid();
      let at = await applied();
      let t = Date.now();
      await server.restart('fast');
      const pid2 = server.pid();
      expect(pid2).toBeDefined();
      expect(pid2).not.toBe(pid1);
      expect(processAlive(pid1!)).toBe(false);
      outages.push(`restart-fast:${Date.now() - t}ms@${at}`);

      // 2. A crash: no shutdown checkpoint, the next start replays the WAL.
      await waitFor(async () => (await applied()) > EVENTS * 0.6, {
        description: '60 % projected',
        timeoutMs: 300_000,
        intervalMs: 20,
      });
      at = await applied();
      t = Date.now();
      await server.stop('immediate');
      expect(processAlive(pid2!)).toBe(false);
      expect(await portOpen(server.port)).toBe(false);
      await new Promise((r) => setTimeout(r, DOWN_MS));
      await server.start();
      expect(server.log()).toMatch(/database system was interrupted|redo starts|automatic recovery/);
      outages.push(`immediate-stop+start:${Date.now() - t}ms@${at}`);

      await waitFor(async () => (await log.lag(group)) === 0, {
        description: 'caught up after the restarts',
        timeoutMs: 300_000,
      });
      const c = await compareWithOracle(stream, direct, ch.client);
      report(
        'postgres server restarted (pg_ctl restart -m fast; stop -m immediate + start) during projection',
        stream.events.length,
        c,
        `duplicates=${all.length - stream.events.length} outages=${outages.join(',')} retriedBatches=${retries}`,
      );
      expect(retries).toBeGreaterThan(0);
      expect(c.diffs).toEqual([]);
      expect({ lost: c.lost, double: c.double }).toEqual({ lost: 0, double: 0 });
    } finally {
      await projector.stop();
      await log.close();
      await pool.end().catch(() => undefined);
      await ch.close();
      rmSync(chDir, { recursive: true, force: true });
    }
  });
});
