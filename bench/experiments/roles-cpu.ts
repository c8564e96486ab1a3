/**
 * CPU per email of each role when they run as separate processes (docs/deploy.md's sizing): the
 * built `services/tern/dist/main.js` started three times — projector+api (one process: no
 * ClickHouse server here, so the embedded engine), sender, dispatcher — on the Kafka broker and a
 * fresh Postgres database, one webhook endpoint (a receiver in this process, every event type).
 * `ROLES_CPU_EMAILS` emails (default 1000) go through `POST /emails/batch` to the sandbox
 * provider; measured from the first POST until every email is DELIVERED and every webhook
 * delivery arrived: CPU time of each process (from /proc) per email, and the rates of the run.
 * Bounded: 240 s at most. Needs `npm run build` first.
 *   npx tsx bench/experiments/roles-cpu.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { signDashboardToken } from '@tern/auth';
import { kafkajs } from '@tern/event-log';
import pg from 'pg';
import { cpuMicrosPer, cpuSnapshot } from '../lib/cpu.js';
import { benchEnv, createFreshDatabase, deleteTopic, pollUntil, runTag, tempDir } from '../lib/services.js';

const { Kafka, logLevel } = kafkajs();

const EMAILS = Number(process.env.ROLES_CPU_EMAILS ?? 1000);
const DEADLINE = Date.now() + 240_000;
const MAIN = resolve(import.meta.dirname, '../../services/tern/dist/main.js');
if (!existsSync(MAIN)) throw new Error(`${MAIN} missing: npm run build first`);

const env = benchEnv(process.env);
const tag = runTag();
const topic = `tern-bench.roles-${tag}`;
const readerGroup = `tern-bench.roles-read-${tag}`;
const db = await createFreshDatabase(env.databaseUrl);
const secret = (n: number) => randomBytes(n).toString('base64url');
const common: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  DATABASE_URL: db.url,
  KAFKA_BROKERS: env.kafkaBrokers.join(','),
  KAFKA_TOPIC: topic,
  KAFKA_PARTITIONS: '6',
  JWT_SECRET: secret(32),
  INGEST_TOKEN: secret(32),
  TRACKING_SECRET: secret(24),
  WEBHOOK_SECRETS_KEY: secret(24),
  ENCRYPTION_KEY: secret(32),
  WEBHOOK_ALLOW_PRIVATE: 'true',
  RATE_LIMIT_PER_MINUTE: '0',
};

let received = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const children: { name: string; child: ChildProcess; port: number; dir: { remove(): void } }[] = [];
let nextPort = 40_000 + Math.floor(Math.random() * 20_000);
function start(name: string, services: string): (typeof children)[number] {
  const port = nextPort++;
  const dir = tempDir('tern-roles-');
  const child = spawn(process.execPath, [MAIN, `--services=${services}`], {
    // Links point at the api (the first process started): PUBLIC_URL is required in production.
    env: {
      ...common,
      PORT: String(port),
      DATA_DIR: dir.path,
      PUBLIC_URL: `http://127.0.0.1:${children[0]?.port ?? port}`,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const entry = { name, child, port, dir };
  children.push(entry);
  return entry;
}

const pool = new pg.Pool({ connectionString: db.url, max: 2 });
try {
  const worker = start('projector+api', 'projector,api');
  start('sender', 'sender');
  start('dispatcher', 'dispatcher');
  for (const c of children) {
    const ready = await pollUntil(
      async () => (await fetch(`http://127.0.0.1:${c.port}/ready`).catch(() => undefined))?.ok === true,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    if (!ready) throw new Error(`${c.name}: not ready after 120 s`);
  }
  const tenant = `roles-${tag}`;
  const auth = {
    authorization: `Bearer ${signDashboardToken({ secret: common.JWT_SECRET!, tenantId: tenant, role: 'owner', expiresInSeconds: 3600 })}`,
    'content-type': 'application/json',
  };
  const api = `http://127.0.0.1:${worker.port}`;
  const hook = await fetch(`${api}/webhooks`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ url: hookUrl, events: ['email.queued', 'email.sent', 'email.delivered'] }),
  });
  if (hook.status !== 201) throw new Error(`POST /webhooks: ${hook.status} ${await hook.text()}`);

  async function sendAndWait(count: number): Promise<void> {
    const before = received;
    const expectedDeliveries = before + count * 3;
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1 AND status = 'DELIVERED'`,
      [tenant],
    );
    const deliveredBefore = Number(rows[0]?.n ?? 0);
    for (let sent = 0; sent < count; sent += 100) {
      const n = Math.min(100, count - sent);
      const res = await fetch(`${api}/emails/batch`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify(
          Array.from({ length: n }, (_, i) => ({
            from: 'bench@acme.test',
            to: 'delivered@sandbox.test',
            subject: `roles ${sent + i}`,
            text: 'Hello',
          })),
        ),
      });
      if (res.status !== 202) throw new Error(`POST /emails/batch: ${res.status} ${await res.text()}`);
    }
    const through = await pollUntil(
      async () => {
        const r = await pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM email_logs WHERE tenant_id = $1 AND status = 'DELIVERED'`,
          [tenant],
        );
        return Number(r.rows[0]?.n ?? 0) >= deliveredBefore + count && received >= expectedDeliveries;
      },
      { timeoutMs: Math.max(1000, DEADLINE - Date.now()), intervalMs: 50 },
    );
    if (!through)
      throw new Error(
        `${count} emails not through within the bound (received ${received - before} deliveries)`,
      );
  }

  process.stderr.write('warm-up: 100 emails\n');
  await sendAndWait(100);
  const pids = new Map(children.map((c) => [c.child.pid!, c.name]));
  // Idle cost first (pollers, timers): subtracted from the run's, so the figure is per email.
  const idleA = cpuSnapshot(pids);
  await new Promise((r) => setTimeout(r, 10_000));
  const idleB = cpuSnapshot(pids);
  const idleMsPerS = (group: string) =>
    ((idleB.byGroup[group] ?? 0) - (idleA.byGroup[group] ?? 0)) / ((idleB.at - idleA.at) / 1000);
  const dbBytes = async () =>
    Number((await pool.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]?.n);
  const tableBytes = async () =>
    new Map(
      (
        await pool.query<{ name: string; n: string }>(
          'SELECT relname AS name, pg_total_relation_size(relid) AS n FROM pg_statio_user_tables',
        )
      ).rows.map((r) => [r.name, Number(r.n)]),
    );
  const bytesBefore = await dbBytes();
  const tablesBefore = await tableBytes();
  const a = cpuSnapshot(pids);
  const started = performance.now();
  process.stderr.write(`measured: ${EMAILS} emails\n`);
  await sendAndWait(EMAILS);
  const seconds = (performance.now() - started) / 1000;
  const b = cpuSnapshot(pids);
  const perEmail = cpuMicrosPer(a, b, EMAILS);
  const postgresPerEmail = (await dbBytes()) - bytesBefore;
  const tableGrowth = [...(await tableBytes())]
    .map(([name, n]) => [name, (n - (tablesBefore.get(name) ?? 0)) / EMAILS] as const)
    .filter(([, perEmail]) => perEmail > 0)
    .sort((x, y) => y[1] - x[1]);
  console.log(
    `${EMAILS} emails in ${seconds.toFixed(1)} s: ${(EMAILS / seconds).toFixed(0)} emails/s, ${((EMAILS * 3) / seconds).toFixed(0)} webhook deliveries/s`,
  );
  console.log(
    'CPU per email (µs) by process: all of it | less the idle rate × the run (Postgres and the broker: every client of theirs on this machine)',
  );
  for (const [group, us] of Object.entries(perEmail).sort((x, y) => y[1] - x[1])) {
    const busy = Math.round(us - (idleMsPerS(group) * seconds * 1000) / EMAILS);
    const perDelivery = group === 'dispatcher' ? `  (${Math.round(busy / 3)} per delivery)` : '';
    console.log(
      `  ${group.padEnd(16)} ${String(us).padStart(8)} | ${String(busy).padStart(8)}${perDelivery}`,
    );
  }
  // What the log holds per email: every record's key and value (uncompressed), read back.
  const kafka = new Kafka({ brokers: env.kafkaBrokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: readerGroup });
  let records = 0;
  let recordBytes = 0;
  const total = EMAILS + 100;
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      records++;
      recordBytes += (message.key?.length ?? 0) + (message.value?.length ?? 0);
    },
  });
  await pollUntil(async () => records >= total * 3, { timeoutMs: 60_000, intervalMs: 100 });
  await consumer.disconnect();
  console.log(
    `stored per email: Postgres ${Math.round(postgresPerEmail / EMAILS)} bytes (database size before/after the run), ` +
      `event log ${Math.round(recordBytes / total)} bytes in ${(records / total).toFixed(1)} records (keys + values, uncompressed)`,
  );
  console.log(
    `  Postgres by table (with indexes and TOAST), bytes per email: ${tableGrowth
      .slice(0, 8)
      .map(([name, perEmail]) => `${name} ${Math.round(perEmail)}`)
      .join(', ')}`,
  );
} finally {
  for (const c of children) c.child.kill('SIGTERM');
  await Promise.all(
    children.map((c) => new Promise((r) => (c.child.exitCode !== null ? r(null) : c.child.once('exit', r)))),
  );
  for (const c of children) c.dir.remove();
  receiver.close();
  await pool.end();
  await deleteTopic(env.kafkaBrokers, topic, [readerGroup]).catch(() => {});
  await db.drop();
}
