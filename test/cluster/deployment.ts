import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import { kafkajs } from '@tern/event-log';
import pg from 'pg';
import { buildTern, freePort, startTern as startTernProcess, type TernProcess } from '../e2e/tern-process.js';
import { watchdog } from '../faults/servers.js';
import { tempDir, uniqueName } from '../support/services.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { type Balancer, startBalancer } from './balancer.js';
import type { WebhookReceiver } from './load.js';

const { Kafka, logLevel } = kafkajs();

/**
 * Tern split into its roles as separate built processes (`node services/tern/dist/main.js
 * --services=…`), as the fault suite and split.e2e run them: ingest, projector + api (one process:
 * they share the embedded chDB directory, read back by the oracle once it has stopped), sender
 * (to an SMTP sink) and dispatcher (to a webhook receiver).
 */

// Every process started here is written down; should this test process end without its teardown
// (a hook timeout, a kill), the exit hook and a watchdog kill them, so none outlives the suite.
const pidsDir = mkdtempSync(join(tmpdir(), 'tern-cluster-pids-'));
const pidsFile = join(pidsDir, 'pids');
appendFileSync(pidsFile, '');
const live = new Set<TernProcess>();
const unwatch = watchdog(
  `for p in $(cat "$PIDS_FILE"); do grep -qa services/tern/dist/main.js /proc/$p/cmdline 2>/dev/null && kill -9 $p; done; rm -rf "$PIDS_DIR"`,
  { PIDS_FILE: pidsFile, PIDS_DIR: pidsDir },
);
process.once('exit', () => {
  for (const p of live) p.child.kill('SIGKILL');
  unwatch();
  rmSync(pidsDir, { recursive: true, force: true });
});

// CLUSTER_LOG_DIR: each process's output (LOG_LEVEL=error) is written there when it exits.
const logDir = process.env.CLUSTER_LOG_DIR;
if (logDir) mkdirSync(logDir, { recursive: true });

async function startTern(opts: Parameters<typeof startTernProcess>[0]): Promise<TernProcess> {
  const p = await startTernProcess(opts);
  live.add(p);
  p.child.once('exit', () => {
    live.delete(p);
    if (logDir)
      appendFileSync(
        join(logDir, `${p.child.pid}-${opts.args?.join('_').replace(/[^a-z,=_-]/g, '') ?? 'tern'}.log`),
        `${p.stdout()}${p.stderr()}`,
      );
  });
  appendFileSync(pidsFile, `${p.child.pid}\n`);
  return p;
}

/**
 * Builds the bundle every process of the suite runs, unless CLUSTER_PREBUILT=1 says it is built
 * already: two files run at once (by hand, on other ports) must not rebuild it under each other's
 * starting processes (tsup empties dist/ first).
 */
export function buildForCluster(): void {
  if (process.env.CLUSTER_PREBUILT !== '1') buildTern();
}

export const TOKEN = 'cluster-ingest-token-0123456789abcdef';
const JWT_SECRET = 'cluster-jwt-secret-0123456789abcdef';
export const GROUPS = ['tern-projector', 'tern-sender', 'tern-dispatcher'] as const;

export interface Deployment {
  env: Record<string, string>;
  ingest: TernProcess;
  api: TernProcess;
  sender: TernProcess;
  dispatcher: TernProcess;
  /** The projector + api process's DATA_DIR (its chDB). */
  dataDir: string;
  /** The DATA_DIR of every projector + api process started (the first, then each extra one). */
  projectorDataDirs: string[];
  /** With `balanced`: HAProxy in front of the ingest and the api processes (balancer.ts). */
  balancers?: { ingest: Balancer; api: Balancer };
  /** Where clients send events: the ingest balancer, or the ingest process. */
  ingestUrl(): string;
  /** Where clients call the api: the api balancer, or the api process. */
  apiUrl(): string;
  tenant: string;
  authorization: string;
  stop(): Promise<void>;
  /**
   * A deployment's step for one role: SIGTERM (it drains and exits), then the same role started
   * again on the same port and data directory. Resolves with the old process's exit code.
   */
  replace(role: Role): Promise<number | null>;
  /**
   * A rolling step behind the balancers, as a deployment does it: ingest (stateless) gets its
   * successor first, on another port, added to the balancer; then the old one is taken out and
   * gets SIGTERM. The api (its chDB directory belongs to one process) is taken out of the
   * balancer (which answers 503 + Retry-After meanwhile), replaced in place, put back. Senders and
   * dispatchers are replaced in place. Resolves with the old process's exit code.
   */
  roll(role: Role): Promise<number | null>;
  /**
   * One more process of `role` (its own port and data directory), to scale out; `api` is a
   * projector + api process (the api alone needs a ClickHouse server): one more projector member
   * and one more api.
   */
  extra(role: 'sender' | 'dispatcher' | 'ingest' | 'api'): Promise<TernProcess>;
  /** SIGKILL of every process started and the balancers: the teardown of a failed test. */
  kill(): Promise<void>;
}

export const ROLES = ['ingest', 'sender', 'dispatcher', 'api'] as const;
export type Role = (typeof ROLES)[number];

export async function startDeployment(opts: {
  databaseUrl: string;
  brokers: string[];
  sink: SmtpSink;
  hooks: WebhookReceiver;
  /** HAProxy in front of ingest and api (balancer.ts). */
  balanced?: boolean;
}): Promise<Deployment> {
  const apiPort = String(await freePort());
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    LOG_LEVEL: 'error',
    DATABASE_URL: opts.databaseUrl,
    KAFKA_BROKERS: opts.brokers.join(','),
    KAFKA_TOPIC: uniqueName('cluster-events'),
    KAFKA_PARTITIONS: '6',
    JWT_SECRET,
    INGEST_TOKEN: TOKEN,
    TRACKING_SECRET: 'cluster-tracking-secret-0123456789',
    WEBHOOK_SECRETS_KEY: 'cluster-webhook-secrets-key-0123456789',
    ENCRYPTION_KEY: 'cluster-encryption-key-0123456789abcdef',
    PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    SMTP_URL: opts.sink.url,
    WEBHOOK_ALLOW_PRIVATE: 'true',
  };
  const started: TernProcess[] = [];
  let balancers: { ingest: Balancer; api: Balancer } | undefined;
  const envOf = new Map<TernProcess, { services: string; env: Record<string, string> }>();
  const role = async (services: string, extra: Record<string, string> = {}) => {
    const roleEnv = { ...env, DATA_DIR: tempDir('tern-cluster-'), PORT: String(await freePort()), ...extra };
    const p = await startTern({ env: roleEnv, args: [`--services=${services}`], readyTimeoutMs: 300_000 });
    started.push(p);
    envOf.set(p, { services, env: roleEnv });
    return p;
  };
  try {
    const dataDir = tempDir('tern-cluster-api-');
    const api = await role('projector,api', { PORT: apiPort, DATA_DIR: dataDir });
    const [ingest, sender, dispatcher] = [
      await role('ingest', { INGEST_WORKERS: '1' }),
      await role('sender'),
      await role('dispatcher'),
    ];
    const tenant = uniqueName('cluster-sends');
    const authorization = `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: tenant, role: 'owner', expiresInSeconds: 7200 })}`;
    const hook = await fetch(`${api.url}/webhooks`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ url: opts.hooks.url, events: ['email.sent'] }),
    });
    if (hook.status !== 201) throw new Error(`webhook endpoint: ${hook.status} ${await hook.text()}`);
    const portOf = (p: TernProcess) => Number(new URL(p.url).port);
    const nameOf = new Map<TernProcess, string>([
      [ingest, 'ingest0'],
      [api, 'api0'],
    ]);
    let named = 0;
    if (opts.balanced) {
      const [ingestLb, apiLb] = await Promise.all([
        startBalancer([{ name: 'ingest0', port: portOf(ingest) }]),
        startBalancer([{ name: 'api0', port: portOf(api) }]),
      ]);
      balancers = { ingest: ingestLb, api: apiLb };
    }
    const deployment: Deployment = {
      env,
      ingest,
      api,
      sender,
      dispatcher,
      dataDir,
      projectorDataDirs: [dataDir],
      ...(balancers ? { balancers } : {}),
      tenant,
      authorization,
      ingestUrl: () => balancers?.ingest.url ?? deployment.ingest.url,
      apiUrl: () => balancers?.api.url ?? deployment.api.url,
      async stop() {
        for (const r of ROLES) await deployment[r].stop(60_000);
        await balancers?.ingest.destroy();
        await balancers?.api.destroy();
      },
      async kill() {
        for (const p of started) p.child.kill('SIGKILL');
        await balancers?.ingest.destroy().catch(() => undefined);
        await balancers?.api.destroy().catch(() => undefined);
      },
      async extra(r) {
        const { services, env: roleEnv } = envOf.get(deployment[r])!;
        const dir = tempDir('tern-cluster-');
        const p = await startTern({
          env: { ...roleEnv, DATA_DIR: dir, PORT: String(await freePort()) },
          args: [`--services=${services}`],
          readyTimeoutMs: 300_000,
        });
        started.push(p);
        envOf.set(p, { services, env: { ...roleEnv, DATA_DIR: dir, PORT: String(portOf(p)) } });
        if (r === 'api') deployment.projectorDataDirs.push(dir);
        return p;
      },
      async roll(r) {
        if (!balancers || r === 'sender' || r === 'dispatcher') return deployment.replace(r);
        const old = deployment[r];
        const lb = balancers[r];
        const name = nameOf.get(old)!;
        if (r === 'ingest') {
          const next = await deployment.extra('ingest');
          const nextName = `ingest${++named}`;
          await lb.add(nextName, portOf(next));
          nameOf.set(next, nextName);
          await lb.remove(name);
          const code = await old.stop(60_000);
          deployment.ingest = next;
          return code;
        }
        await lb.drain(name);
        const code = await deployment.replace('api');
        nameOf.set(deployment.api, name);
        await lb.ready(name);
        return code;
      },
      async replace(r) {
        const old = deployment[r];
        const { services, env: roleEnv } = envOf.get(old)!;
        const code = await old.stop(60_000);
        const p = await startTern({
          env: roleEnv,
          args: [`--services=${services}`],
          readyTimeoutMs: 300_000,
        });
        started.push(p);
        envOf.set(p, { services, env: roleEnv });
        deployment[r] = p;
        return code;
      },
    };
    return deployment;
  } catch (error) {
    for (const p of started) p.child.kill('SIGKILL');
    await balancers?.ingest.destroy().catch(() => undefined);
    await balancers?.api.destroy().catch(() => undefined);
    throw error;
  }
}

/** Samples of the consumer groups' states and the projector's lag, every `everyMs`. */
export interface Monitor {
  /** The longest run of non-Stable samples of each group that began in [from, to]. */
  rebalance(from: number, to: number): Record<string, number>;
  /** The projector's lag of the last sample, when that sample is under 2 s old. */
  lagNow(): number | undefined;
  /** The topic's end offsets of the last sample (partition → offset). */
  endsNow(): Map<number, number> | undefined;
  /**
   * Whether the projector's committed offsets (last sample, under 2 s old) have reached `ends`:
   * caught up with what was appended until then, while sends go on appending.
   */
  reached(ends: Map<number, number>): boolean;
  /** The largest projector lag sampled in [from, to]. */
  maxLag(from: number, to: number): number;
  /** Events applied by the projector (projection_status), now. */
  applied(): Promise<number>;
  stop(): Promise<void>;
}

export function startMonitor(brokers: string[], topic: string, databaseUrl: string, everyMs = 500): Monitor {
  const kafka = new Kafka({
    brokers,
    clientId: 'cluster-monitor',
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2_000,
    requestTimeout: 5_000,
    retry: { retries: 1 },
  });
  const admin = kafka.admin();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  pool.on('error', () => undefined);
  const states: { t: number; group: string; stable: boolean }[] = [];
  const lags: { t: number; lag: number }[] = [];
  let last: { t: number; ends: Map<number, number>; done: Map<number, number> } | undefined;
  let stopping = false;
  const sample = async () => {
    const t = Date.now();
    try {
      const { groups } = await admin.describeGroups([...GROUPS]);
      for (const g of groups) states.push({ t, group: g.groupId, stable: g.state === 'Stable' });
    } catch {
      for (const group of GROUPS) states.push({ t, group, stable: false });
    }
    try {
      const [ends, committed] = await Promise.all([
        admin.fetchTopicOffsets(topic),
        admin.fetchOffsets({ groupId: 'tern-projector', topics: [topic] }),
      ]);
      const done = new Map(committed[0]!.partitions.map((p) => [p.partition, Number(p.offset)]));
      last = { t, ends: new Map(ends.map((e) => [e.partition, Number(e.high)])), done };
      lags.push({
        t,
        lag: ends.reduce(
          (s, e) => s + Math.max(0, Number(e.high) - Math.max(0, done.get(e.partition) ?? 0)),
          0,
        ),
      });
    } catch {
      // a broker gone: no lag sample this time
    }
  };
  const loop = (async () => {
    await admin.connect().catch(() => undefined);
    while (!stopping) {
      const t = Date.now();
      await sample();
      await new Promise((r) => setTimeout(r, Math.max(0, everyMs - (Date.now() - t))));
    }
  })();
  return {
    rebalance(from, to) {
      const out: Record<string, number> = {};
      for (const group of GROUPS) {
        let longest = 0;
        let since: number | undefined;
        for (const s of states.filter((x) => x.group === group && x.t >= from)) {
          if (!s.stable) {
            if (since === undefined && s.t <= to) since = s.t;
          } else if (since !== undefined) {
            longest = Math.max(longest, s.t - since);
            since = undefined;
          }
        }
        if (since !== undefined) longest = Math.max(longest, Date.now() - since);
        out[group] = longest;
      }
      return out;
    },
    lagNow() {
      const last = lags.at(-1);
      return last && Date.now() - last.t < 2000 ? last.lag : undefined;
    },
    endsNow: () => last?.ends,
    reached(ends) {
      if (!last || Date.now() - last.t > 2000) return false;
      return [...ends].every(([partition, end]) => (last!.done.get(partition) ?? -1) >= end);
    },
    maxLag: (from, to) => Math.max(0, ...lags.filter((l) => l.t >= from && l.t <= to).map((l) => l.lag)),
    async applied() {
      const { rows } = await pool.query(
        'SELECT coalesce(max(events_total), 0)::bigint AS n FROM projection_status',
      );
      return Number(rows[0].n);
    },
    async stop() {
      stopping = true;
      await loop;
      await admin.disconnect().catch(() => undefined);
      await pool.end();
    },
  };
}
