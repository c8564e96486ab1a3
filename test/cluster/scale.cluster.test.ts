import { rmSync } from 'node:fs';
import { createClickHouse } from '@tern/stores';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTern, type TernProcess } from '../e2e/tern-process.js';
import { compareWithOracle, generateStream } from '../faults/stream.js';
import { createFreshDatabase, testServices, waitFor } from '../support/services.js';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.js';
import { type Deployment, type Monitor, ROLES, startDeployment, startMonitor, TOKEN } from './deployment.js';
import {
  sendFigures,
  startIngestLoad,
  startSendLoad,
  startWebhookReceiver,
  type WebhookReceiver,
} from './load.js';

/**
 * Senders 1 → 4 → 1 and dispatchers 1 → 3 → 1 while ingest (CLUSTER_SCALE_RATE events/s),
 * sends and email.sent webhooks flow: extra processes of the role join its consumer group and
 * its leased queue, then leave with SIGTERM (exit 0). Every acked email reaches the relay once,
 * every webhook arrives (repeats of a webhook-id counted: at-least-once allows the attempt in
 * flight when a dispatcher leaves), the ingest stream is projected exactly (the oracle), and the
 * projector's lag during each change is printed.
 * Projectors 1 → 3 → 1 are not here: with the embedded ClickHouse each projector process has
 * its own engine, so the oracle would need a ClickHouse server (CLICKHOUSE_URL) shared by them.
 */
const RATE = Number(process.env.CLUSTER_SCALE_RATE ?? 200);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('senders and dispatchers scaled out and in under load', () => {
  let db: { url: string; drop(): Promise<void> };
  let sink: SmtpSink;
  let hooks: WebhookReceiver;
  let tern: Deployment | undefined;
  let monitor: Monitor;
  const extras: TernProcess[] = [];

  beforeAll(async () => {
    buildTern();
    [db, sink, hooks] = await Promise.all([createFreshDatabase(), startSmtpSink(), startWebhookReceiver()]);
    tern = await startDeployment({ databaseUrl: db.url, brokers: testServices().kafkaBrokers, sink, hooks });
    monitor = startMonitor(testServices().kafkaBrokers, tern.env.KAFKA_TOPIC!, db.url);
  }, 600_000);

  afterAll(async () => {
    await monitor?.stop().catch(() => undefined);
    for (const p of extras) p.child.kill('SIGKILL');
    if (tern) for (const r of ROLES) tern[r].child.kill('SIGKILL');
    await sink?.close();
    await hooks?.close();
    await db?.drop();
  }, 180_000);

  it('senders 1 → 4 → 1, dispatchers 1 → 3 → 1: every count exact, nothing sent twice', async () => {
    const deployment = tern!;
    const stream = generateStream({
      minEvents: RATE * 90,
      tenants: 4,
      seed: 491,
      prefix: `scl${Date.now() % 1e6}`,
    });
    const load = startIngestLoad({
      url: deployment.ingest.url,
      token: TOKEN,
      events: stream.events,
      ratePerS: RATE,
      deadlineMs: 900_000,
    });
    const sends = startSendLoad({ url: () => deployment.api.url, authorization: deployment.authorization });
    const steps: string[] = [];
    const change = async (what: string, work: () => Promise<void>) => {
      const t = Date.now();
      await work();
      await sleep(10_000);
      steps.push(
        `${what} in ${Date.now() - t - 10_000} ms, projector lag max ${monitor.maxLag(t, Date.now())}`,
      );
    };
    await sleep(10_000);
    for (const [role, n] of [
      ['sender', 3],
      ['dispatcher', 2],
    ] as const) {
      const added: TernProcess[] = [];
      await change(`${role} 1 → ${n + 1}`, async () => {
        for (let i = 0; i < n; i++) added.push(await deployment.extra(role));
        extras.push(...added);
      });
      await change(`${role} ${n + 1} → 1`, async () => {
        for (const p of added) expect(await p.stop(60_000), role).toBe(0);
      });
    }
    await load.done;
    await sends.stop();
    await waitFor(() => monitor.lagNow() === 0, {
      timeoutMs: 600_000,
      intervalMs: 1000,
      description: 'caught up',
    });
    await waitFor(() => sendFigures(sends.acked, sink, hooks).lost === 0, {
      timeoutMs: 300_000,
      intervalMs: 1000,
      description: 'every acked email at the relay',
    });
    await waitFor(() => sendFigures(sends.acked, sink, hooks).hooksMissing === 0, {
      timeoutMs: 300_000,
      intervalMs: 1000,
      description: 'every acked email.sent webhook delivered',
    });
    const figures = sendFigures(sends.acked, sink, hooks);
    tern = undefined;
    await deployment.stop();
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const ch = createClickHouse({ dataDir: deployment.dataDir });
    try {
      const c = await compareWithOracle(stream, pool, ch.client);
      console.log(
        [
          `[cluster] scaling (${steps.join('; ')}):`,
          `events=${stream.events.length} rate=${RATE}/s lost=${c.lost} double=${c.double}`,
          `acked=${figures.acked} sendsLost=${figures.lost} sendsDouble=${figures.double} webhooksMissing=${figures.hooksMissing} webhookRepeats=${figures.hookRepeats}`,
          `rebalanceMaxMs=${JSON.stringify(monitor.rebalance(0, Date.now()))}`,
        ].join(' '),
      );
      expect(c.diffs).toEqual([]);
      expect({ lost: figures.lost, double: figures.double, hooksMissing: figures.hooksMissing }).toEqual({
        lost: 0,
        double: 0,
        hooksMissing: 0,
      });
      expect(load.availability.unexpected).toEqual([]);
      expect(sends.availability.unexpected).toEqual([]);
    } finally {
      await ch.close();
      await pool.end();
      rmSync(deployment.dataDir, { recursive: true, force: true });
    }
  }, 900_000);
});
