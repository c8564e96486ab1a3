import { kafkajs } from '@tern/event-log';
import type { Kafka as KafkaClient } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareWithOracle, generateStream, type Stream } from '../faults/stream.js';
import { waitFor } from '../support/services.js';
import { TOKEN } from './deployment.js';
import { type SendLoad, startIngestLoad, startSendLoad } from './load.js';
import { allDelivered, clusterSuite, readBack } from './suite.js';
import { type Audit, audit, eventKey, foldedEvents, formatAudit, readTopic } from './topic-audit.js';

const { Kafka, logLevel } = kafkajs();

/**
 * Tern on a three-broker KRaft cluster (infra/kafka/cluster.sh), every role a built process of
 * its own, under load: ingest at CLUSTER_RATE events/s (the fault suite's oracle stream), sends
 * through the api every 500 ms to an SMTP sink, email.sent webhooks to a receiver. Three faults,
 * one after the other, each on its own slice of the stream: kill -9 of the leader of a busy
 * partition, a broker stopped for CLUSTER_DOWN_S (60) s, kill -9 of the active controller. Each:
 * 0 lost, 0 double (Postgres and ClickHouse against the oracle), the longest 503 window, the
 * consumer groups' longest rebalance, printed. After each fault the whole topic is read back
 * (topic-audit.ts): every 202'd event id must be in the topic and folded by the projector.
 * CLUSTER_FAULTS (comma-separated: leader, stop, controller; default all) picks the faults run.
 */
const RATE = Number(process.env.CLUSTER_RATE ?? 400);
const DOWN_S = Number(process.env.CLUSTER_DOWN_S ?? 60);
const WARMUP_S = 10;
const FAULTS = (process.env.CLUSTER_FAULTS ?? 'leader,stop,controller').split(',');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Phase {
  name: string;
  stream: Stream;
  line: string;
  audit: Audit;
}

describe('Kafka, three brokers: faults under load', () => {
  const suite = clusterSuite();
  let sends: SendLoad;
  let kafka: KafkaClient;
  let pool: pg.Pool;
  const phases: Phase[] = [];

  // After the suite's beforeAll (Tern deployed), before its afterAll (after-hooks run in reverse order).
  beforeAll(() => {
    const { cluster, db, tern } = suite;
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    kafka = new Kafka({ brokers: cluster.brokers, logLevel: logLevel.NOTHING, clientId: 'cluster-test' });
    const api = tern!.api;
    sends = startSendLoad({ url: () => api.url, authorization: tern!.authorization });
  });
  afterAll(async () => {
    await sends?.stop().catch(() => undefined);
    await pool?.end();
  });

  /** Partition leaders and in-sync replicas of Tern's topic. */
  async function topicMetadata() {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [suite.tern!.env.KAFKA_TOPIC!] });
      return topics[0]!.partitions;
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Waits (up to 3 min) for every partition to have 3 in-sync replicas again before the next
   * fault; says how many are still short when they are not (a replica fetcher that marked a
   * partition failed rejoins only at the next leader change: kafka.log of the node).
   */
  async function fullIsr(): Promise<string> {
    const t = Date.now();
    try {
      await waitFor(async () => (await topicMetadata()).every((p) => p.isr.length === 3), {
        timeoutMs: 180_000,
        intervalMs: 1000,
      });
      return `isr=3 after ${Date.now() - t} ms`;
    } catch {
      const short = (await topicMetadata()).filter((p) => p.isr.length < 3).length;
      console.log(`[cluster] ${short} partition(s) still under-replicated after 180 s`);
      return `under-replicated=${short}`;
    }
  }

  /** Ingest `seconds` of load at RATE; `fault` runs WARMUP_S in; then the projection catches up. */
  async function phase(name: string, seconds: number, seed: number, fault: () => Promise<string>) {
    const stream = generateStream({
      minEvents: RATE * seconds,
      tenants: 4,
      seed,
      prefix: `cl${seed}${Date.now() % 1e6}`,
    });
    const load = startIngestLoad({
      url: suite.tern!.ingest.url,
      token: TOKEN,
      events: stream.events,
      ratePerS: RATE,
      deadlineMs: (seconds + 300) * 1000,
    });
    const t0 = Date.now();
    await Promise.race([sleep(WARMUP_S * 1000), load.done]);
    const faultAt = Date.now();
    const what = await fault();
    await load.done;
    const ingestedAt = Date.now();
    const total = stream.events.length;
    // Sends keep appending: caught up = past every end offset of the moment ingest finished (a
    // sample taken after it).
    await sleep(1500);
    await waitFor(() => suite.monitor.endsNow() !== undefined, { timeoutMs: 60_000, intervalMs: 500 });
    const ends = suite.monitor.endsNow()!;
    await waitFor(() => suite.monitor.reached(ends), {
      timeoutMs: 600_000,
      intervalMs: 1000,
      description: `${name}: the projector caught up`,
    });
    const caughtUp = Date.now();
    const rebalance = suite.monitor.rebalance(faultAt, ingestedAt);
    const line = [
      `[cluster] ${name}: ${what}`,
      `events=${total} rate=${RATE}/s achieved=${Math.round(total / ((ingestedAt - t0) / 1000))}/s`,
      `ingest503Max=${load.availability.longest()}ms http=${JSON.stringify(load.availability.statuses)}`,
      `sends503Max=${sends.availability.longest(faultAt, ingestedAt)}ms`,
      `rebalanceMaxMs=${JSON.stringify(rebalance)}`,
      `projectorLagMax=${suite.monitor.maxLag(faultAt, caughtUp)} catchUpAfterIngest=${caughtUp - ingestedAt}ms`,
    ].join(' ');
    console.log(line);
    // Every event of the stream got its 202 (load.done): where did each go?
    const found = audit({
      records: await readTopic(suite.cluster.brokers, suite.tern!.env.KAFKA_TOPIC!),
      acked: stream.events.map((e) => `${e.tenantId}|${e.id}`),
      keyOf: eventKey,
      folded: await foldedEvents(pool, stream.tenants),
    });
    console.log(`[cluster] ${name} audit: ${formatAudit(found)}`);
    phases.push({ name, stream, line, audit: found });
    expect(load.availability.unexpected).toEqual([]);
    expect(sends.availability.unexpected).toEqual([]);
  }

  it('creates its topic with 3 replicas and min.insync.replicas=2', async () => {
    const partitions = await topicMetadata();
    expect(partitions).toHaveLength(6);
    for (const p of partitions) expect(p.replicas).toHaveLength(3);
    const admin = kafka.admin();
    await admin.connect();
    try {
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2, name: suite.tern!.env.KAFKA_TOPIC!, configNames: ['min.insync.replicas'] }],
      });
      expect(resources[0]!.configEntries[0]).toMatchObject({
        configName: 'min.insync.replicas',
        configValue: '2',
      });
    } finally {
      await admin.disconnect();
    }
  });

  it.runIf(FAULTS.includes('leader'))(
    'kill -9 of the leader of a busy partition',
    async () => {
      await phase('kill -9 partition leader', 40, 461, async () => {
        const leader = (await topicMetadata()).find((p) => p.partitionId === 0)!.leader;
        await suite.cluster.kill(leader);
        await sleep(20_000);
        await suite.cluster.start(leader);
        return `node ${leader} (leader of partition 0) killed, restarted after 20 s`;
      });
      console.log(`[cluster] before the next fault: ${await fullIsr()}`);
    },
    900_000,
  );

  it.runIf(FAULTS.includes('stop'))(
    `a broker stopped for ${DOWN_S} s and started again`,
    async () => {
      await phase(`broker stopped ${DOWN_S} s`, DOWN_S + 30, 462, async () => {
        const node = (await topicMetadata()).find((p) => p.partitionId === 1)!.leader;
        await suite.cluster.stop(node);
        await sleep(DOWN_S * 1000);
        await suite.cluster.start(node);
        return `node ${node} (leader of partition 1) stopped (SIGTERM) ${DOWN_S} s`;
      });
      console.log(`[cluster] before the next fault: ${await fullIsr()}`);
    },
    900_000,
  );

  it.runIf(FAULTS.includes('controller'))(
    'kill -9 of the active controller',
    async () => {
      await phase('kill -9 active controller', 40, 463, async () => {
        const controller = await suite.cluster.controller();
        await suite.cluster.kill(controller);
        const next = await suite.cluster.controller();
        await sleep(20_000);
        await suite.cluster.start(controller);
        return `controller node ${controller} killed (new controller ${next}), restarted after 20 s`;
      });
      console.log(`[cluster] before the next fault: ${await fullIsr()}`);
    },
    900_000,
  );

  it('every fault: 0 lost, 0 double in Postgres and ClickHouse; every acked send once at the relay', async () => {
    await sends.stop();
    const acked = sends.acked;
    const figures = await allDelivered(acked, suite.sink, suite.hooks, suite.db.url);
    const deployment = suite.tern!;
    suite.tern = undefined;
    await deployment.stop();
    await readBack(suite.db.url, deployment.dataDir, async (pool, ch) => {
      for (const p of phases) {
        const c = await compareWithOracle(p.stream, pool, ch);
        console.log(`${p.line} lost=${c.lost} double=${c.double} ${formatAudit(p.audit)}`);
        expect(c.diffs, p.name).toEqual([]);
        expect({ missingFromTopic: p.audit.missingFromTopic, notFolded: p.audit.notFolded }, p.name).toEqual({
          missingFromTopic: 0,
          notFolded: 0,
        });
      }
    });
    console.log(
      `[cluster] sends: acked=${figures.acked} lost=${figures.lost} double=${figures.double} webhooksMissing=${figures.hooksMissing} webhookRepeats=${figures.hookRepeats} sends503Max=${sends.availability.longest()}ms http=${JSON.stringify(sends.availability.statuses)}`,
    );
    expect(phases).toHaveLength(FAULTS.length);
    expect({ lost: figures.lost, double: figures.double, hooksMissing: figures.hooksMissing }).toEqual({
      lost: 0,
      double: 0,
      hooksMissing: 0,
    });
  }, 900_000);
});
