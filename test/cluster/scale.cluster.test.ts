import { rmSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { TernProcess } from '../e2e/tern-process.js';
import { compareWithOracle } from '../faults/stream.js';
import { clickhouseShortfall, summedClickHouse } from './projections.js';
import { balancedLoad, clusterSuite, settled } from './suite.js';

/**
 * Roles scaled out and in while ingest (CLUSTER_SCALE_RATE events/s), sends and email.sent
 * webhooks flow, on the suite's three-broker cluster, with HAProxy in front of ingest and api:
 * projector members 1 → 3 → 1, senders 1 → 4 → 1, dispatchers 1 → 3 → 1, api 1 → 2 behind the
 * balancer. Extra processes join their consumer group (and the sender's and dispatcher's leased
 * queues), then leave with SIGTERM (exit 0). A projector member is a projector + api process (the
 * projector alone needs a ClickHouse server): each has its own embedded engine, and the oracle
 * adds their figures (projections.ts). Every acked email reaches the relay once, every webhook
 * arrives (repeats of a webhook-id counted: at-least-once allows the attempt in flight when a
 * dispatcher leaves), the ingest stream is projected exactly, no client sees anything but 2xx or
 * 503 + Retry-After, and the projector's lag during each change is printed.
 */
const RATE = Number(process.env.CLUSTER_SCALE_RATE ?? 150);
const SECONDS = Number(process.env.CLUSTER_SCALE_S ?? 240);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('roles scaled out and in under load', () => {
  const suite = clusterSuite({ balanced: true });
  const extras: TernProcess[] = [];
  // Runs before the suite's afterAll (after-hooks run in reverse order).
  afterAll(() => {
    for (const p of extras) p.child.kill('SIGKILL');
  });

  it('projector 1 → 3 → 1, sender 1 → 4 → 1, dispatcher 1 → 3 → 1, api 1 → 2: every count exact, nothing sent twice', async () => {
    const { db, sink, hooks, monitor } = suite;
    const deployment = suite.tern!;
    const { stream, load, sends } = balancedLoad(deployment, {
      ratePerS: RATE,
      seconds: SECONDS,
      seed: 491,
      prefix: `scl${Date.now() % 1e6}`,
      deadlineMs: 1_500_000,
    });
    let ingestDone = false;
    void load.done.then(() => {
      ingestDone = true;
    });
    const steps: string[] = [];
    const change = async (what: string, work: () => Promise<void>) => {
      const t = Date.now();
      const before = load.accepted();
      await work();
      const took = Date.now() - t;
      await sleep(10_000);
      steps.push(
        `${what} in ${took} ms (lag max ${monitor.maxLag(t, Date.now())}, ${load.accepted() - before} events accepted meanwhile${ingestDone ? ', ingest finished' : ''})`,
      );
    };
    await sleep(10_000);
    for (const [role, label, n] of [
      ['api', 'projector', 2],
      ['sender', 'sender', 3],
      ['dispatcher', 'dispatcher', 2],
    ] as const) {
      const added: TernProcess[] = [];
      await change(`${label} 1 → ${n + 1}`, async () => {
        for (let i = 0; i < n; i++) added.push(await deployment.extra(role));
        extras.push(...added);
      });
      await change(`${label} ${n + 1} → 1`, async () => {
        for (const p of added) expect(await p.stop(60_000), label).toBe(0);
      });
    }
    let api2: TernProcess | undefined;
    await change('api 1 → 2 (balancer)', async () => {
      api2 = await deployment.extra('api');
      extras.push(api2);
      await deployment.balancers!.api.add('api-extra', Number(new URL(api2.url).port));
    });
    await load.done;
    await sends.stop();
    const figures = await settled(monitor, sends.acked, sink, hooks);
    await deployment.balancers!.api.remove('api-extra');
    expect(await api2!.stop(60_000), 'api 2').toBe(0);
    suite.tern = undefined;
    await deployment.stop();
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      const keys = ['tenant_id', 'day', 'template_id'];
      const summed = summedClickHouse(deployment.projectorDataDirs, keys);
      const c = await compareWithOracle(stream, pool, summed.client);
      // Postgres's diffs come first in the list (the oracle compares it first).
      const postgresDiffs = c.diffs.filter((d) => d.startsWith('postgres'));
      const ch = clickhouseShortfall(stream.figures, summed.rows(), keys);
      console.log(
        [
          `[cluster] scaling (${steps.join('; ')}):`,
          `events=${stream.events.length} rate=${RATE}/s postgresDiffs=${postgresDiffs.length} clickhouseLost=${ch.lost} clickhouseOverSummedEngines=${ch.over}`,
          `ingest503Max=${load.availability.longest()}ms ingest=${JSON.stringify(load.availability.statuses)}`,
          `sends503Max=${sends.availability.longest()}ms sends=${JSON.stringify(sends.availability.statuses)}`,
          `acked=${figures.acked} sendsLost=${figures.lost} sendsDouble=${figures.double} webhooksMissing=${figures.hooksMissing} webhookRepeats=${figures.hookRepeats}`,
          `rebalanceMaxMs=${JSON.stringify(monitor.rebalance(0, Date.now()))}`,
        ].join(' '),
      );
      expect(postgresDiffs).toEqual([]);
      expect(ch.lost).toBe(0);
      expect({ lost: figures.lost, double: figures.double, hooksMissing: figures.hooksMissing }).toEqual({
        lost: 0,
        double: 0,
        hooksMissing: 0,
      });
      // At-least-once: each of the two dispatchers that leave may have its 16 attempts in flight.
      expect(figures.hookRepeats).toBeLessThanOrEqual(32);
      expect(load.availability.unexpected).toEqual([]);
      expect(sends.availability.unexpected).toEqual([]);
    } finally {
      await pool.end();
      for (const dir of deployment.projectorDataDirs) rmSync(dir, { recursive: true, force: true });
    }
  }, 1_800_000);
});
