// Helpers for integration and e2e tests. The services come from test/setup/global-setup.ts,
// which hands them to every test process through environment variables (read here, at the
// test-code boundary) and through vitest `provide` (`inject('ternServices')`).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface TestServices {
  kafkaBrokers: string[];
  /** A fresh database of this test run, dropped when the run ends. */
  databaseUrl: string;
  /** Set only when a ClickHouse server was configured; otherwise tests use embedded chDB. */
  clickhouseUrl?: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    ternServices: TestServices & { topicPrefix: string };
  }
}

const SETUP_HINT =
  'run it in the int or e2e vitest project (test/setup/global-setup.ts provides the services)';

/** The real services of this run. Throws when the global setup did not run. */
export function testServices(): TestServices {
  const brokers = process.env.KAFKA_BROKERS;
  const databaseUrl = process.env.DATABASE_URL;
  if (!brokers || !databaseUrl) {
    throw new Error(`testServices(): KAFKA_BROKERS and DATABASE_URL are not set; ${SETUP_HINT}`);
  }
  const clickhouseUrl = process.env.CLICKHOUSE_URL || undefined;
  return {
    kafkaBrokers: brokers
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b.length > 0),
    databaseUrl,
    ...(clickhouseUrl ? { clickhouseUrl } : {}),
  };
}

let nameCounter = 0;

/**
 * A name no other test (of this run or of a concurrent one) uses: for topics, consumer groups,
 * tenants. Starts with the run's topic prefix, so the global teardown can find and delete the
 * topics and groups a run made. Characters stay within what Kafka names and tenant ids accept.
 */
export function uniqueName(prefix: string): string {
  const runPrefix = process.env.TERN_TEST_TOPIC_PREFIX ?? 'tern-test.';
  const clean = prefix.replace(/[^A-Za-z0-9._-]/g, '-');
  nameCounter += 1;
  return `${runPrefix}${clean}-${process.pid}-${nameCounter}-${randomBytes(3).toString('hex')}`;
}

function adminDatabaseUrl(): string {
  const url = process.env.TERN_TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!url) throw new Error(`createFreshDatabase(): DATABASE_URL is not set; ${SETUP_HINT}`);
  return url;
}

let databaseCounter = 0;

/**
 * A separate empty database on the run's Postgres server, for a test that needs one of its own.
 * Call `drop()` when done; the global teardown drops any that are left.
 */
export async function createFreshDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = adminDatabaseUrl();
  // Names carry the run id so the global teardown (and a later run's sweep) can find leftovers.
  const runId = process.env.TERN_TEST_RUN_ID ?? `tern_test_${Date.now()}`;
  databaseCounter += 1;
  const name = `${runId}_f${process.pid}_${databaseCounter}_${randomBytes(2).toString('hex')}`.toLowerCase();
  return createNamedDatabase(adminUrl, name);
}

/** Creates database `name` on the server of `adminUrl`; `drop()` removes it (once). Benches use it too. */
export async function createNamedDatabase(
  adminUrl: string,
  name: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const tempDirs: string[] = [];
let exitHookInstalled = false;

/** A new empty directory under the OS temp dir (e.g. a chDB data dir), removed when the process exits. */
export function tempDir(prefix = 'tern-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

export interface WaitForOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between attempts (default 50 ms). */
  intervalMs?: number;
  /** Named in the timeout error. */
  description?: string;
}

/**
 * Polls `fn` until it returns a truthy value and resolves with that value. A throwing attempt
 * counts as "not yet". Tests wait for asynchronous effects with this, never with a fixed sleep.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 50, description }: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: string = 'no attempt finished';
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
      last = `last result: ${JSON.stringify(value)}`;
    } catch (err) {
      last = `last error: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `waitFor${description ? ` (${description})` : ''} timed out after ${timeoutMs} ms; ${last}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A fresh database and a pool over it for one test file or `describe`: `beforeAll(db.open)`, `afterAll(db.close)`. */
export interface FreshPool {
  /** The database's URL, once `open` ran. */
  readonly url: string;
  /** The pool over it, once `open` ran. */
  readonly pool: pg.Pool;
  /** Creates the database and a pool of `max` connections over it, then runs `prepare` on the pool. */
  open(): Promise<void>;
  /** Closes the pool, then drops the database. */
  close(): Promise<void>;
}

/**
 * The set-up the package tests on a database of their own share: a fresh database
 * (`createFreshDatabase`), a pool of `max` connections, `prepare` (e.g. `migratePostgres`, or a
 * table of the test's own) run on it; `close` ends the pool and drops the database.
 */
export function freshPool({
  max,
  prepare,
}: {
  max: number;
  prepare?: (pool: pg.Pool) => Promise<unknown>;
}): FreshPool {
  let db: { url: string; drop(): Promise<void> } | undefined;
  let pool: pg.Pool | undefined;
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('freshPool(): not open yet; call open() in a beforeAll');
    return value;
  };
  return {
    get url() {
      return opened(db).url;
    },
    get pool() {
      return opened(pool);
    },
    async open() {
      db = await createFreshDatabase();
      pool = new pg.Pool({ connectionString: db.url, max });
      // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
      pool.on('error', () => undefined);
      await prepare?.(pool);
    },
    async close() {
      await pool?.end();
      await db?.drop();
    },
  };
}

/**
 * A test's teardown: closes what it opened, in this order — `stop()` what has one (a listener),
 * `close()` the rest; what was never opened (undefined) is skipped.
 */
export async function closeInOrder(
  ...opened: ({ stop(): Promise<unknown> } | { close(): Promise<unknown> } | undefined)[]
): Promise<void> {
  for (const o of opened) if (o) await ('stop' in o ? o.stop() : o.close());
}
