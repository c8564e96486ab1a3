import { rmSync } from 'node:fs';
import type { ClickHouseClient } from '@clickhouse/client';
import { createClickHouse } from '@tern/stores';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { generateStream } from '../faults/stream.js';
import { createFreshDatabase, waitFor } from '../support/services.js';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.js';
import {
  buildForCluster,
  type Deployment,
  type Monitor,
  startDeployment,
  startMonitor,
  TOKEN,
} from './deployment.js';
import { type KafkaCluster, startKafkaCluster } from './kafka-cluster.js';
import {
  sendFigures,
  startIngestLoad,
  startSendLoad,
  startWebhookReceiver,
  type WebhookReceiver,
  whyHooksMissing,
} from './load.js';

/**
 * What the cluster tests share around their own load and faults: the servers Tern runs against
 * (and Tern on them), the wait until everything acknowledged has arrived, and the read-back of the
 * stores once the deployment has stopped.
 */

/** The suite's three-broker cluster, a fresh database, an SMTP sink and a webhook receiver. */
export type ClusterServices = [
  KafkaCluster,
  { url: string; drop(): Promise<void> },
  SmtpSink,
  WebhookReceiver,
];

/** The cluster tests' servers, started together. */
export const startClusterServices = (): Promise<ClusterServices> =>
  Promise.all([startKafkaCluster(), createFreshDatabase(), startSmtpSink(), startWebhookReceiver()]);

/** Stops what `startClusterServices` started: the cluster, the sink, the receiver, then drops the database. */
export async function stopClusterServices([
  cluster,
  db,
  sink,
  hooks,
]: Partial<ClusterServices>): Promise<void> {
  await cluster?.destroy();
  await sink?.close();
  await hooks?.close();
  await db?.drop();
}

export interface ClusterSuite {
  cluster: KafkaCluster;
  db: { url: string; drop(): Promise<void> };
  sink: SmtpSink;
  hooks: WebhookReceiver;
  /** Tern on them; a test that stops it itself sets this to undefined first (afterAll kills it else). */
  tern: Deployment | undefined;
  monitor: Monitor;
}

/**
 * A cluster test's `describe`: before all, the built Tern deployed on `startClusterServices`
 * (`balanced`: behind HAProxy) with a monitor of its lag; after all, the monitor stopped, Tern
 * killed, the servers gone. The fields are set once `beforeAll` has run: a test reads them in
 * its body.
 */
export function clusterSuite(opts: { balanced?: boolean } = {}): ClusterSuite {
  const suite = {} as ClusterSuite;
  beforeAll(async () => {
    buildForCluster();
    const [cluster, db, sink, hooks] = await startClusterServices();
    Object.assign(suite, { cluster, db, sink, hooks });
    const tern = await startDeployment({
      databaseUrl: db.url,
      brokers: cluster.brokers,
      sink,
      hooks,
      ...opts,
    });
    suite.tern = tern;
    suite.monitor = startMonitor(cluster.brokers, tern.env.KAFKA_TOPIC!, db.url);
  }, 900_000);
  afterAll(async () => {
    await suite.monitor?.stop().catch(() => undefined);
    await suite.tern?.kill();
    await stopClusterServices([suite.cluster, suite.db, suite.sink, suite.hooks]);
  }, 180_000);
  return suite;
}

/**
 * The load of a test behind the balancers: the oracle stream of `seed` (4 tenants, at least
 * `ratePerS` × `seconds` events) ingested at `ratePerS` within `deadlineMs`, and sends through the api.
 */
export function balancedLoad(
  deployment: Deployment,
  opts: { ratePerS: number; seconds: number; seed: number; prefix: string; deadlineMs: number },
) {
  const stream = generateStream({
    minEvents: opts.ratePerS * opts.seconds,
    tenants: 4,
    seed: opts.seed,
    prefix: opts.prefix,
  });
  const load = startIngestLoad({
    url: deployment.ingestUrl(),
    token: TOKEN,
    events: stream.events,
    ratePerS: opts.ratePerS,
    deadlineMs: opts.deadlineMs,
    balanced: true,
  });
  const sends = startSendLoad({
    url: () => deployment.apiUrl(),
    authorization: deployment.authorization,
    balanced: true,
  });
  return { stream, load, sends };
}

/**
 * Waits (5 min each) until every acked email reached the relay and its email.sent webhook was
 * delivered; the send figures then. Given the database, a missing webhook's failure says where
 * the emails are stuck (`whyHooksMissing`).
 */
export async function allDelivered(
  acked: string[],
  sink: SmtpSink,
  hooks: WebhookReceiver,
  databaseUrl?: string,
) {
  await waitFor(() => sendFigures(acked, sink, hooks).lost === 0, {
    timeoutMs: 300_000,
    intervalMs: 1000,
    description: 'every acked email at the relay',
  });
  await waitFor(() => sendFigures(acked, sink, hooks).hooksMissing === 0, {
    timeoutMs: 300_000,
    intervalMs: 1000,
    description: 'every acked email.sent webhook delivered',
  }).catch(async (error: Error) => {
    if (databaseUrl === undefined) throw error;
    throw new Error(
      `${error.message}; ${await whyHooksMissing(sendFigures(acked, sink, hooks).hooksMissingIds, databaseUrl)}`,
    );
  });
  return sendFigures(acked, sink, hooks);
}

/** After the load: the projector caught up (10 min), then `allDelivered`. */
export async function settled(monitor: Monitor, acked: string[], sink: SmtpSink, hooks: WebhookReceiver) {
  await waitFor(() => monitor.lagNow() === 0, {
    timeoutMs: 600_000,
    intervalMs: 1000,
    description: 'the projector caught up',
  });
  return allDelivered(acked, sink, hooks);
}

/**
 * Reads a stopped deployment's stores back: `check` gets a pool on its database and its embedded
 * ClickHouse (`dataDir`); then both are closed and the data directory removed.
 */
export async function readBack(
  databaseUrl: string,
  dataDir: string,
  check: (pool: pg.Pool, ch: ClickHouseClient) => Promise<void>,
): Promise<void> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const ch = createClickHouse({ dataDir });
  try {
    await check(pool, ch.client);
  } finally {
    await ch.close();
    await pool.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
