import { rmSync } from 'node:fs';
import type { ClickHouseClient } from '@clickhouse/client';
import { createClickHouse } from '@tern/stores';
import pg from 'pg';
import { createFreshDatabase, waitFor } from '../support/services.js';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.js';
import type { Monitor } from './deployment.js';
import { type KafkaCluster, startKafkaCluster } from './kafka-cluster.js';
import { sendFigures, startWebhookReceiver, type WebhookReceiver, whyHooksMissing } from './load.js';

/**
 * What the cluster tests share around their own load and faults: the servers Tern runs against,
 * the wait until everything acknowledged has arrived, and the read-back of the stores once the
 * deployment has stopped.
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
