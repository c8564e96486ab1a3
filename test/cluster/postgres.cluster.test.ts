import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processAlive } from '../faults/servers.js';
import { compareWithOracle, generateStream } from '../faults/stream.js';
import { testServices, waitFor } from '../support/services.js';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.js';
import {
  buildForCluster,
  type Deployment,
  type Monitor,
  ROLES,
  startDeployment,
  startMonitor,
  TOKEN,
} from './deployment.js';
import {
  Availability,
  startIngestLoad,
  startSendLoad,
  startWebhookReceiver,
  type WebhookReceiver,
} from './load.js';
import { type PostgresPair, startPostgresPair } from './postgres-pair.js';
import { allDelivered, readBack } from './suite.js';

/**
 * Postgres failover under load. Every Tern role (built processes, split mode, the log on the
 * shared Kafka broker under its own topic) reaches Postgres through HAProxy only. Ingest runs at
 * CLUSTER_PG_RATE events/s, sends every 500 ms, email.sent webhooks, a reader polls the api. Then
 * kill -9 of the primary's postmaster; CLUSTER_PROMOTE_AFTER_S later (the operator's or the
 * failover manager's detection) the standby is promoted; HAProxy's check finds the new primary.
 * Tern reconnects by itself; every 202 and every webhook 2xx stays; the api's longest
 * unavailability is the failover time.
 */
const RATE = Number(process.env.CLUSTER_PG_RATE ?? 200);
const PROMOTE_AFTER_S = Number(process.env.CLUSTER_PROMOTE_AFTER_S ?? 3);
const SENDS_IN_FLIGHT = 32;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Postgres failover: kill -9 of the primary, the standby promoted behind HAProxy', () => {
  let pair: PostgresPair;
  let sink: SmtpSink;
  let hooks: WebhookReceiver;
  let tern: Deployment | undefined;
  let monitor: Monitor;

  beforeAll(async () => {
    buildForCluster();
    [pair, sink, hooks] = await Promise.all([startPostgresPair(), startSmtpSink(), startWebhookReceiver()]);
    tern = await startDeployment({
      databaseUrl: pair.url,
      brokers: testServices().kafkaBrokers,
      sink,
      hooks,
    });
    monitor = startMonitor(testServices().kafkaBrokers, tern.env.KAFKA_TOPIC!, pair.url);
    await pair.synchronous();
  }, 600_000);

  afterAll(async () => {
    await monitor?.stop().catch(() => undefined);
    if (tern) for (const r of ROLES) tern[r].child.kill('SIGKILL');
    await pair?.destroy();
    await sink?.close();
    await hooks?.close();
  }, 180_000);

  it('kill -9 of the primary, standby promoted: Tern reconnects, nothing acknowledged is lost', async () => {
    const deployment = tern!;
    const stream = generateStream({
      minEvents: RATE * 50,
      tenants: 4,
      seed: 471,
      prefix: `pgf${Date.now() % 1e6}`,
    });
    const load = startIngestLoad({
      url: deployment.ingest.url,
      token: TOKEN,
      events: stream.events,
      ratePerS: RATE,
      deadlineMs: 600_000,
    });
    const sends = startSendLoad({ url: () => deployment.api.url, authorization: deployment.authorization });
    // A reader: GET /emails/logs every 250 ms.
    const reads = new Availability();
    let reading = true;
    const reader = (async () => {
      while (reading) {
        try {
          const res = await fetch(`${deployment.api.url}/emails/logs?limit=1`, {
            headers: { authorization: deployment.authorization },
            signal: AbortSignal.timeout(10_000),
          });
          if (res.ok) reads.ok(res.status);
          else reads.failed(String(res.status), res.status === 503 && res.headers.has('retry-after'));
          await res.body?.cancel();
        } catch (error) {
          reads.failed(`connection:${(error as Error).name}`, true);
        }
        await sleep(250);
      }
    })();
    await sleep(15_000);
    const pid = pair.primaryPid()!;
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !processAlive(pid), { timeoutMs: 10_000, description: 'the primary gone' });
    await sleep(PROMOTE_AFTER_S * 1000);
    const promoteAt = Date.now();
    await pair.promote();
    await waitFor(async () => (await pair.routedTo()) === 'pg2', {
      timeoutMs: 60_000,
      intervalMs: 100,
      description: 'HAProxy routing to the promoted standby',
    });
    const switchedAt = Date.now();
    await load.done;
    await sleep(5_000);
    reading = false;
    await reader;
    await sends.stop();
    const ingestedAt = Date.now();
    await waitFor(() => monitor.lagNow() === 0, {
      timeoutMs: 600_000,
      intervalMs: 1000,
      description: 'the projector caught up',
    });
    const figures = await allDelivered(sends.acked, sink, hooks);
    tern = undefined;
    await deployment.stop();
    await readBack(pair.url, deployment.dataDir, async (pool, ch) => {
      const c = await compareWithOracle(stream, pool, ch);
      console.log(
        [
          `[cluster] postgres failover: primary killed, promoted after ${((promoteAt - killedAt) / 1000).toFixed(1)} s,`,
          `proxy switched ${switchedAt - killedAt} ms after the kill;`,
          `events=${stream.events.length} rate=${RATE}/s achieved=${Math.round(stream.events.length / ((ingestedAt - killedAt + 15_000) / 1000))}/s lost=${c.lost} double=${c.double}`,
          `apiReadUnavailableMax=${reads.longest()}ms reads=${JSON.stringify(reads.statuses)}`,
          `sendsUnavailableMax=${sends.availability.longest()}ms sends=${JSON.stringify(sends.availability.statuses)}`,
          `ingestUnavailableMax=${load.availability.longest()}ms ingest=${JSON.stringify(load.availability.statuses)}`,
          `acked=${figures.acked} sendsLost=${figures.lost} sendsDouble=${figures.double} webhooksMissing=${figures.hooksMissing} webhookRepeats=${figures.hookRepeats}`,
          `projectorLagMax=${monitor.maxLag(killedAt, Date.now())}`,
        ].join(' '),
      );
      expect(c.diffs).toEqual([]);
      expect({ lost: figures.lost, hooksMissing: figures.hooksMissing }).toEqual({
        lost: 0,
        hooksMissing: 0,
      });
      // A send whose outcome was being recorded when the primary died is sent again (its lease
      // runs out): at most the sender's sends in flight (32), nothing beyond (measured: 2).
      expect(figures.double).toBeLessThanOrEqual(SENDS_IN_FLIGHT);
      expect(reads.unexpected).toEqual([]);
      expect(sends.availability.unexpected).toEqual([]);
      expect(load.availability.unexpected).toEqual([]);
    });
  }, 900_000);
});
