import { describe, expect, it } from 'vitest';
import { compareWithOracle } from '../faults/stream.js';
import { ROLES } from './deployment.js';
import { balancedLoad, clusterSuite, readBack, settled } from './suite.js';

/**
 * A rolling restart of every role under load, as a deployment does it, on the suite's three-broker
 * cluster with HAProxy in front of ingest and api (Deployment.roll): ingest's successor starts on
 * another port and joins the balancer before the old process is taken out and gets SIGTERM; the
 * api (projector + api: its chDB directory belongs to one process) is taken out of the balancer,
 * drains, exits 0 and starts again on its port and data directory, the balancer answering 503 +
 * Retry-After meanwhile; sender and dispatcher are replaced in place. One after the other while
 * ingest (CLUSTER_ROLL_RATE events/s), sends and webhooks flow. Then 0 lost, 0 double (the
 * oracle), every acked send once at the relay, and no answer but 2xx or 503 + Retry-After (a
 * refused connection counts as a client error: the balancer is there to hide it).
 */
const RATE = Number(process.env.CLUSTER_ROLL_RATE ?? 150);
const SECONDS = Number(process.env.CLUSTER_ROLL_S ?? 150);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('rolling restart of every role under load', () => {
  const suite = clusterSuite({ balanced: true });

  it('each process replaced in turn: 0 lost, 0 double, only 503 + Retry-After', async () => {
    const { db, sink, hooks, monitor } = suite;
    const deployment = suite.tern!;
    const { stream, load, sends } = balancedLoad(deployment, {
      ratePerS: RATE,
      seconds: SECONDS,
      seed: 481,
      prefix: `roll${Date.now() % 1e6}`,
      deadlineMs: 1_200_000,
    });
    const steps: string[] = [];
    await sleep(10_000);
    for (const role of ROLES) {
      const t = Date.now();
      const code = await deployment.roll(role);
      steps.push(`${role}: exit ${code}, replaced in ${Date.now() - t} ms`);
      expect(code, role).toBe(0);
      await sleep(5_000);
    }
    await load.done;
    await sends.stop();
    const figures = await settled(monitor, sends.acked, sink, hooks);
    suite.tern = undefined;
    await deployment.stop();
    await readBack(db.url, deployment.dataDir, async (pool, ch) => {
      const c = await compareWithOracle(stream, pool, ch);
      console.log(
        [
          `[cluster] rolling restart (${steps.join('; ')}):`,
          `events=${stream.events.length} rate=${RATE}/s lost=${c.lost} double=${c.double}`,
          `ingestUnavailableMax=${load.availability.longest()}ms ingest=${JSON.stringify(load.availability.statuses)}`,
          `sendsUnavailableMax=${sends.availability.longest()}ms sends=${JSON.stringify(sends.availability.statuses)}`,
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
    });
  }, 1_800_000);
});
