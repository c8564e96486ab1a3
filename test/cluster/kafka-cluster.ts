import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { portOpen, run, watchdog } from '../faults/servers.js';

/**
 * The cluster suite's three-node KRaft cluster: infra/kafka/cluster.sh on its own ports (29092..
 * 29094, controllers 29192..29194; CLUSTER_KAFKA_PORT moves them) with its data under a temp dir.
 * A watchdog stops it and deletes the dir if this test process dies before its teardown.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = join(root, 'infra/kafka/cluster.sh');

export interface KafkaCluster {
  brokers: string[];
  /** Broker port of node n (1..3). */
  port(node: number): number;
  pid(node: number): Promise<number | undefined>;
  /** Node id of the active controller (the metadata quorum's leader). */
  controller(): Promise<number>;
  kill(node: number): Promise<void>;
  stop(node: number): Promise<void>;
  start(node: number): Promise<void>;
  destroy(): Promise<void>;
}

export async function startKafkaCluster(): Promise<KafkaCluster> {
  const base = Number(process.env.CLUSTER_KAFKA_PORT ?? 29092);
  for (const p of [base, base + 1, base + 2, base + 100, base + 101, base + 102])
    if (await portOpen(p)) throw new Error(`port ${p} is taken: set CLUSTER_KAFKA_PORT to a free range`);
  const dir = mkdtempSync(join(tmpdir(), 'tern-cluster-kafka-'));
  const env = {
    ...process.env,
    KAFKA_CLUSTER_DIR: dir,
    KAFKA_CLUSTER_PORT: String(base),
    KAFKA_CLUSTER_CONTROLLER_PORT: String(base + 100),
    // Each node's start and the readiness probe: generous, a JVM start took 20–60 s on the loaded
    // 2-core machine.
    KAFKA_START_TIMEOUT: process.env.KAFKA_START_TIMEOUT ?? '400',
  };
  const script = async (...args: string[]) =>
    (await run('bash', [SCRIPT, ...args], { env, timeoutMs: 600_000 })).stdout.trim();
  const unwatch = watchdog(`bash "$SCRIPT" stop >/dev/null 2>&1; rm -rf "$KAFKA_CLUSTER_DIR"`, {
    SCRIPT,
    KAFKA_CLUSTER_DIR: dir,
    KAFKA_CLUSTER_PORT: String(base),
    KAFKA_CLUSTER_CONTROLLER_PORT: String(base + 100),
  });
  let destroyed = false;
  const cluster: KafkaCluster = {
    brokers: [0, 1, 2].map((i) => `127.0.0.1:${base + i}`),
    port: (node) => base + node - 1,
    async pid(node) {
      const out = await script('pid', String(node)).catch(() => '');
      return out ? Number(out) : undefined;
    },
    async controller() {
      return Number(await script('controller'));
    },
    async kill(node) {
      await script('kill-node', String(node));
    },
    async stop(node) {
      await script('stop-node', String(node));
    },
    async start(node) {
      await script('start-node', String(node));
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        await script('stop');
      } finally {
        rmSync(dir, { recursive: true, force: true });
        unwatch();
      }
    },
  };
  try {
    await script('start');
  } catch (error) {
    await cluster.destroy().catch(() => undefined);
    throw error;
  }
  return cluster;
}
