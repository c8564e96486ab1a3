import { rmSync } from 'node:fs';
import { createEventStream, createKafkaEventLog, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import { createClickHouse, migrateClickHouse } from '@tern/stores';
import { describe, expect, it } from 'vitest';
import { tempDir, uniqueName, waitFor } from '../support/services.js';
import { portOpen, processAlive } from './servers.js';
import { faultServers, quiet } from './setup.js';
import { compareWithOracle, duplicatesOf, generateStream, type RawEvent, report } from './stream.js';

/**
 * The Kafka broker stopped during ingest, for real: a native broker of this test
 * (infra/kafka/start.sh on free ports; the shared broker is untouched) carries the topic; ingest
 * (`POST /events`) and the projector both use it. A third of the way through the stream the broker
 * process is stopped (infra/kafka/stop.sh, while requests are in flight), held down DOWN_MS and
 * started again on the same data. While it is down `POST /events` must answer 503 with
 * Retry-After; the sender retries; afterwards every event that got a 202 must be projected
 * exactly once (Postgres and ClickHouse compared with the oracle of stream.ts).
 */
const EVENTS = Number(process.env.FAULTS_EVENTS ?? 20_000);
const DOWN_MS = 3000;
const TOKEN = 'faults-ingest-token-0123456789abcdef';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Kafka broker stopped during ingest (a dedicated broker)', () => {
  const servers = faultServers({ broker: true, migrate: true });

  it('broker process stopped and started again mid-ingest: 503 while down, every 202 event projected once', async () => {
    const { broker, pool: direct } = servers;
    const stream = generateStream({
      minEvents: EVENTS,
      tenants: 4,
      seed: 31,
      prefix: `kfk${Date.now() % 1e6}`,
    });
    const topic = uniqueName('faults-kafka');
    const kafkaLog = (): EventLog =>
      createKafkaEventLog({ brokers: broker.brokers, topic, partitions: 3, logger: quiet, timeoutMs: 3000 });
    const ingestLog = kafkaLog();
    const projectorLog = kafkaLog();
    const chDir = tempDir('tern-faults-kafka-ch-');
    const ch = createClickHouse({ dataDir: chDir });
    await migrateClickHouse(ch.client);
    const ingest = await createIngestApp({ log: createEventStream(ingestLog), ingestToken: TOKEN });
    const group = uniqueName('faults-kafka-group');
    const projector = createProjector({
      pool: direct,
      ch: ch.client,
      log: createEventStream(projectorLog),
      group,
      maxBatchSize: 2000,
      retry: { initialMs: 50, maxMs: 500 },
    });
    const applied = async () =>
      Number(
        (await direct.query('SELECT coalesce(max(events_total), 0) AS n FROM projection_status')).rows[0].n,
      );
    const statuses: Record<number, number> = {};
    const timeline: string[] = [];
    const t0 = Date.now();
    const mark = (what: string) => timeline.push(`${what}@${((Date.now() - t0) / 1000).toFixed(1)}s`);
    let outage: Promise<void> | undefined;
    try {
      await projector.start();
      const batches: RawEvent[][] = [];
      const all = [...stream.events, ...duplicatesOf(stream, 0.02, 32)];
      for (let i = 0; i < all.length; i += 250) batches.push(all.slice(i, i + 250));
      const stopAt = Math.floor(batches.length / 3);
      // The last third waits until the broker process is gone, so it meets the outage for sure.
      const holdAt = Math.floor((batches.length * 2) / 3);
      let stopped: Promise<void> | undefined;

      for (let b = 0; b < batches.length; b++) {
        if (b === stopAt) {
          const pid = broker.pid();
          expect(pid).toBeDefined();
          mark('stop');
          // Not awaited: ingest goes on while the broker shuts down.
          stopped = broker.stop().then(async () => {
            mark('stopped');
            expect(processAlive(pid!)).toBe(false);
            expect(await portOpen(broker.port)).toBe(false);
          });
          outage = stopped.then(async () => {
            await sleep(DOWN_MS);
            mark('start');
            await broker.start();
            mark('started');
            // The projector's consumer lost the broker too: when does it apply again?
            const before = await applied();
            await waitFor(async () => (await applied()) > before, {
              description: 'projection resumed after the broker came back',
              timeoutMs: 240_000,
              intervalMs: 100,
            });
            mark('projecting');
          });
        }
        if (b === holdAt) await stopped;
        // A sender retries what got 503, as Retry-After tells it to (faster here: 200 ms).
        const deadline = Date.now() + 240_000;
        for (;;) {
          const res = await ingest.inject({
            method: 'POST',
            url: '/events',
            headers: { authorization: `Bearer ${TOKEN}` },
            payload: { events: batches[b] },
          });
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          if (res.statusCode === 202) break;
          expect(res.statusCode, res.body).toBe(503);
          expect(res.headers['retry-after']).toBe('5');
          expect(Date.now(), 'the broker did not come back within 240 s').toBeLessThan(deadline);
          await sleep(200);
        }
      }
      await outage;
      mark('ingested');
      await waitFor(async () => (await projectorLog.lag(group)) === 0, {
        description: 'caught up after the broker came back',
        timeoutMs: 300_000,
        intervalMs: 200,
      });
      mark('projected');
      const c = await compareWithOracle(stream, direct, ch.client);
      report(
        `kafka broker process stopped (stop.sh) and restarted (start.sh) during ingest, down ≥ ${DOWN_MS / 1000} s`,
        stream.events.length,
        c,
        `duplicates=${all.length - stream.events.length} http=${JSON.stringify(statuses)} timeline=${timeline.join(',')}`,
      );
      expect(statuses[503]).toBeGreaterThan(0);
      expect(c.diffs).toEqual([]);
      expect({ lost: c.lost, double: c.double }).toEqual({ lost: 0, double: 0 });
    } finally {
      await outage?.catch(() => undefined);
      await projector.stop();
      await ingest.close();
      await ingestLog.close();
      await projectorLog.close();
      await ch.close();
      rmSync(chDir, { recursive: true, force: true });
    }
  });
});
