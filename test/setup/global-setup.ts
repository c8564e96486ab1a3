// Global setup of the int and e2e vitest projects: obtains real services once per run, in this
// order, service by service:
//   1. variables already set (KAFKA_BROKERS, DATABASE_URL, CLICKHOUSE_URL);
//   2. testcontainers, when a Docker engine answers `docker info`;
//   3. infra/up.sh: a broker on 127.0.0.1:$KAFKA_PORT (reused, or the native one started) and
//      the machine's Postgres; whatever it started is stopped again in the teardown.
// Each run gets a fresh Postgres database and a topic prefix; both are handed to the test
// processes as environment variables (workers are forked after this runs) and via `provide`.
// This is an entry point of the test run, so it reads and writes process.env.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kafkajs } from '@tern/event-log';
import pg from 'pg';
import type { StartedTestContainer } from 'testcontainers';
import type { TestProject } from 'vitest/node';
import type { TestServices } from '../support/services.js';

/** kafkajs as Tern loads it (its RequestQueue's idle timer fixed: no TimeoutNegativeWarning). */
const { Kafka, logLevel } = kafkajs();

const REPO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NO_KAFKA =
  'No Kafka broker: set KAFKA_BROKERS or run `npm run infra:up` (needs Java 17 + Maven), or start a Docker engine';
const NO_POSTGRES =
  'No Postgres server: set DATABASE_URL or start one on 127.0.0.1:5432 (`npm run infra:up`), or start a Docker engine';
// Databases of runs that died before their teardown are dropped by a later run after this long.
const STALE_AFTER_MS = 6 * 60 * 60 * 1000;

interface Run {
  services: TestServices & { topicPrefix: string };
  teardown(): Promise<void>;
}

interface Shared {
  run: Promise<Run>;
  users: number;
}

// The int and e2e projects each call this setup; they share one run (one database, one prefix,
// one broker), started by the first and torn down by the last.
const SHARED_KEY = Symbol.for('tern.test.global-setup');
const holder = globalThis as unknown as Record<symbol, Shared | undefined>;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let shared = holder[SHARED_KEY];
  if (!shared) {
    shared = { run: startRun(), users: 0 };
    holder[SHARED_KEY] = shared;
  }
  shared.users += 1;
  const run = await shared.run.catch((err: unknown) => {
    holder[SHARED_KEY] = undefined;
    throw oneLine(err);
  });
  project.provide('ternServices', run.services);
  return async () => {
    const current = holder[SHARED_KEY];
    if (!current) return;
    current.users -= 1;
    if (current.users > 0) return;
    holder[SHARED_KEY] = undefined;
    await run.teardown();
  };
}

async function startRun(): Promise<Run> {
  const cleanups: Array<() => Promise<void>> = [];
  const teardown = async () => {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (err) {
        process.stderr.write(`[test setup] teardown step failed: ${describe(err)}\n`);
      }
    }
  };
  try {
    const services = await obtainServices(cleanups);
    return { services, teardown };
  } catch (err) {
    await teardown();
    throw err;
  }
}

async function obtainServices(cleanups: Array<() => Promise<void>>): Promise<Run['services']> {
  const env = process.env;
  let brokers = env.KAFKA_BROKERS?.trim() || undefined;
  let serverUrl = env.DATABASE_URL?.trim() || undefined;
  const clickhouseUrl = env.CLICKHOUSE_URL?.trim() || undefined;

  if ((!brokers || !serverUrl) && (await dockerAnswers())) {
    if (!brokers) brokers = await kafkaContainer(cleanups);
    if (!serverUrl) serverUrl = await postgresContainer(cleanups);
  }
  if (!brokers || !serverUrl) {
    const wanted = [...(brokers ? [] : ['kafka']), ...(serverUrl ? [] : ['postgres'])];
    const settings = await infraUp(wanted, cleanups);
    brokers ??= settings.KAFKA_BROKERS;
    serverUrl ??= settings.DATABASE_URL;
  }
  if (!brokers) throw new Error(NO_KAFKA);
  if (!serverUrl) throw new Error(NO_POSTGRES);

  const kafkaBrokers = brokers
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  const runId = `tern_test_${timestamp(new Date())}_${randomBytes(3).toString('hex')}`;
  const topicPrefix = `${runId}.`;

  await checkKafka(kafkaBrokers);
  cleanups.push(() => deleteRunTopicsAndGroups(kafkaBrokers, topicPrefix));

  const databaseUrl = await createRunDatabase(serverUrl, runId);
  cleanups.push(() => dropRunDatabases(serverUrl, runId));

  const previous = {
    KAFKA_BROKERS: env.KAFKA_BROKERS,
    DATABASE_URL: env.DATABASE_URL,
    TERN_TEST_ADMIN_DATABASE_URL: env.TERN_TEST_ADMIN_DATABASE_URL,
    TERN_TEST_TOPIC_PREFIX: env.TERN_TEST_TOPIC_PREFIX,
    TERN_TEST_RUN_ID: env.TERN_TEST_RUN_ID,
  };
  env.KAFKA_BROKERS = kafkaBrokers.join(',');
  env.DATABASE_URL = databaseUrl;
  env.TERN_TEST_ADMIN_DATABASE_URL = serverUrl;
  env.TERN_TEST_TOPIC_PREFIX = topicPrefix;
  env.TERN_TEST_RUN_ID = runId;
  cleanups.push(async () => {
    for (const [key, value] of Object.entries(previous)) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
  });

  process.stderr.write(
    `[test setup] kafka ${kafkaBrokers.join(',')} · database ${runId} · ` +
      `clickhouse ${clickhouseUrl ?? 'embedded chDB'}\n`,
  );
  return { kafkaBrokers, databaseUrl, topicPrefix, ...(clickhouseUrl ? { clickhouseUrl } : {}) };
}

// --- Docker / testcontainers ------------------------------------------------------------------

function dockerAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('docker', ['info'], { timeout: 15_000 }, (err) => resolve(!err));
  });
}

async function kafkaContainer(cleanups: Array<() => Promise<void>>): Promise<string> {
  const { GenericContainer, Wait } = await import('testcontainers');
  // The broker advertises the address clients must use, so the host port is fixed up front.
  const hostPort = await freePort();
  const container = await new GenericContainer('apache/kafka:3.9.1')
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_LISTENERS: 'PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${hostPort}`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_INTER_BROKER_LISTENER_NAME: 'PLAINTEXT',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '8',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    })
    .withExposedPorts({ container: 9092, host: hostPort })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(120_000)
    .start();
  cleanups.push(() => stopContainer(container));
  return `127.0.0.1:${hostPort}`;
}

async function postgresContainer(cleanups: Array<() => Promise<void>>): Promise<string> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('postgres:16')
    .withEnvironment({ POSTGRES_PASSWORD: 'tern', POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withExposedPorts(5432)
    // The entrypoint starts the server twice (init, then for real): wait for the second.
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .withStartupTimeout(120_000)
    .start();
  cleanups.push(() => stopContainer(container));
  return `postgres://postgres:tern@${container.getHost()}:${container.getMappedPort(5432)}/postgres`;
}

async function stopContainer(container: StartedTestContainer): Promise<void> {
  await container.stop({ timeout: 10_000 });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

// --- infra/up.sh ------------------------------------------------------------------------------

async function infraUp(
  services: string[],
  cleanups: Array<() => Promise<void>>,
): Promise<Record<string, string>> {
  const { code, stdout, lastError } = await runScript(join(REPO_DIR, 'infra', 'up.sh'), services);
  const settings = parseSettings(stdout);
  const started = settings.INFRA_STARTED?.split(' ').filter((e) => e.length > 0) ?? [];
  if (started.length > 0) {
    cleanups.push(async () => {
      await runScript(join(REPO_DIR, 'infra', 'down.sh'), started);
    });
  }
  if (code !== 0) {
    const why = lastError ? `; infra/up.sh: ${lastError}` : '';
    const base = services.includes('kafka') && !settings.KAFKA_BROKERS ? NO_KAFKA : NO_POSTGRES;
    throw new Error(`${base}${why}`);
  }
  return settings;
}

function runScript(
  path: string,
  args: string[],
): Promise<{ code: number; stdout: string; lastError: string | undefined }> {
  return new Promise((resolve) => {
    // Progress (stderr) is shown as it comes: a first run downloads the broker from Maven Central.
    const child = spawn('bash', [path, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let lastError: string | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      process.stderr.write(text);
      const lines = text.split('\n').filter((l) => l.trim().length > 0);
      lastError = lines.at(-1) ?? lastError;
    });
    child.on('error', (err) => resolve({ code: 127, stdout, lastError: err.message }));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, lastError }));
  });
}

function parseSettings(stdout: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (match?.[1]) settings[match[1]] = match[2] ?? '';
  }
  return settings;
}

// --- Kafka ------------------------------------------------------------------------------------

function kafkaAdmin(brokers: string[]) {
  return new Kafka({
    clientId: 'tern-test-setup',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3_000,
    retry: { retries: 2 },
  }).admin();
}

async function checkKafka(brokers: string[]): Promise<void> {
  const admin = kafkaAdmin(brokers);
  try {
    await admin.connect();
    await admin.listTopics();
  } catch (err) {
    throw new Error(`${NO_KAFKA} (KAFKA_BROKERS=${brokers.join(',')}: ${describe(err)})`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function deleteRunTopicsAndGroups(brokers: string[], prefix: string): Promise<void> {
  const admin = kafkaAdmin(brokers);
  try {
    await admin.connect();
    const groups = (await admin.listGroups()).groups
      .map((g) => g.groupId)
      .filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await admin.deleteGroups(groups).catch(() => undefined);
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (topics.length > 0) await admin.deleteTopics({ topics, timeout: 15_000 });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

// --- Postgres ---------------------------------------------------------------------------------

async function createRunDatabase(serverUrl: string, runId: string): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(`${NO_POSTGRES} (DATABASE_URL=${redact(serverUrl)}: ${describe(err)})`);
  }
  try {
    await dropStaleDatabases(client);
    await client.query(`CREATE DATABASE "${runId}"`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${runId}`;
  return url.toString();
}

async function dropStaleDatabases(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE datname LIKE 'tern\\_test\\_%'",
  );
  const now = Date.now();
  for (const { datname } of rows) {
    const stamp = /^tern_test_(\d{14})_/.exec(datname)?.[1];
    if (!stamp) continue;
    const at = Date.UTC(
      Number(stamp.slice(0, 4)),
      Number(stamp.slice(4, 6)) - 1,
      Number(stamp.slice(6, 8)),
      Number(stamp.slice(8, 10)),
      Number(stamp.slice(10, 12)),
      Number(stamp.slice(12, 14)),
    );
    if (now - at > STALE_AFTER_MS) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
  }
}

/** Drops the run's database and every database createFreshDatabase() made in this run. */
async function dropRunDatabases(serverUrl: string, runId: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $2)',
      [runId, `${runId}_`],
    );
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}

// --- small things -----------------------------------------------------------------------------

function timestamp(d: Date): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// Vitest prints an error's stack; a setup failure is one line that says what to do.
function oneLine(err: unknown): Error {
  const error = err instanceof Error ? err : new Error(String(err));
  error.message = error.message.replace(/\s*\n\s*/g, ' ');
  error.stack = error.message;
  return error;
}
