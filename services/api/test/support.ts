// Shared fixtures of the query API tests: real Postgres (a fresh database per test file) and
// chDB in a temp dir (one per process: vitest forks one process per file), data seeded through
// the real projector sinks, a settable clock, and credentials.
import { createHmac, randomBytes } from 'node:crypto';
import { type ClickHouseClient, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { createJwtVerifier, type JwtVerifier, signDashboardToken } from '@tern/auth';
import { type DeliveryEvent, deliveryEventSchema, type Role } from '@tern/contracts';
import type { MailboxOf } from '@tern/domain';
import { createKeyring } from '@tern/privacy';
import { applyBatchToPostgres, shipBatch } from '@tern/projector';
import { createClickHouse, migrateClickHouse, migratePostgres } from '@tern/stores';
import { createSecretBox } from '@tern/webhooks';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createFreshDatabase, tempDir } from '../../../test/support/services.js';
import {
  type ApiData,
  type ApiDeps,
  type ApiFeatures,
  type ApiHttpOptions,
  type ApiLimits,
  type ApiPolicy,
  createApiApp,
} from '../src/index.js';

export const JWT_SECRET = 'api-test-secret-that-is-long-enough';
export const TRACKING_SECRET = 'api-test-tracking-secret-0123456789';
/** WEBHOOK_SECRETS_KEY of the test apps; loopback webhook URLs are allowed (development default). */
export const WEBHOOK_SECRETS_KEY = 'api-test-webhook-secrets-key';
/** ENCRYPTION_KEY of the test apps (≥ 32 bytes): the keyring behind `POST /contacts/erase`. */
export const ENCRYPTION_KEY = 'api-test-encryption-key-0123456789abcdef';
export const DEFAULT_RETENTION_DAYS = 90;
/** The fixed "now" of the tests: a Monday noon UTC. */
export const NOW = '2026-06-15T12:00:00.000Z';
export const DAY_MS = 86_400_000;

export const suffix = () => randomBytes(4).toString('hex');

/** A clock the tests move by hand. */
export interface TestClock {
  now: () => Date;
  set(iso: string): void;
  advance(ms: number): void;
}

export function createClock(iso = NOW): TestClock {
  let current = new Date(iso);
  return {
    now: () => new Date(current.getTime()),
    set(value) {
      current = new Date(value);
    },
    advance(ms) {
      current = new Date(current.getTime() + ms);
    },
  };
}

/**
 * A test file's two tenants, `<prefix>-a-<run>` and `<prefix>-b-<run>` (`run` unique to the file's
 * run), and its clock at `iso`.
 */
export function testTenants(prefix: string, iso = NOW) {
  const run = suffix();
  return { clock: createClock(iso), run, A: `${prefix}-a-${run}`, B: `${prefix}-b-${run}` };
}

export interface Stores {
  pool: pg.Pool;
  ch: ClickHouseClient;
  databaseUrl: string;
  close(): Promise<void>;
}

/** A fresh migrated database and a migrated ClickHouse for one test file. */
export async function openStores(): Promise<Stores> {
  const db = await createFreshDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 6 });
  // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
  pool.on('error', () => undefined);
  await migratePostgres(pool);
  const clickhouseUrl = process.env.CLICKHOUSE_URL || undefined;
  const ch = createClickHouse({ dataDir: tempDir('tern-api-ch-'), clickhouseUrl });
  await migrateClickHouse(ch.client);
  return {
    pool,
    ch: ch.client,
    databaseUrl: db.url,
    async close() {
      await ch.close();
      await pool.end();
      await db.drop();
    },
  };
}

/**
 * Stores that never answer (a closed port, 500 ms timeouts): the app's wiring, its document and its
 * 503s are tested without a database. Nothing listens on 127.0.0.1:9 (discard).
 */
export function unreachableStores(): Pick<Stores, 'pool' | 'ch'> {
  return {
    pool: new pg.Pool({
      connectionString: 'postgres://nobody@127.0.0.1:9/none',
      connectionTimeoutMillis: 500,
    }),
    ch: createClient({
      url: 'http://127.0.0.1:9',
      request_timeout: 500,
      log: { level: ClickHouseLogLevel.OFF },
    }),
  };
}

/** What a test changes of `buildApp`'s app: any fields of any group of `ApiDeps`, merged group by group. */
export interface AppOverrides {
  data?: Partial<ApiData>;
  jwt?: JwtVerifier;
  policy?: Partial<ApiPolicy>;
  limits?: ApiLimits;
  features?: ApiFeatures;
  http?: ApiHttpOptions;
}

/** `deps` with the fields of each override (later ones win), group by group. */
export function withOverrides(deps: ApiDeps, ...overrides: AppOverrides[]): ApiDeps {
  let out = deps;
  for (const o of overrides)
    out = {
      data: { ...out.data, ...o.data },
      jwt: o.jwt ?? out.jwt,
      policy: { ...out.policy, ...o.policy },
      limits: { ...out.limits, ...o.limits },
      features: { ...out.features, ...o.features },
      http: { ...out.http, ...o.http },
    };
  return out;
}

export async function buildApp(
  stores: Pick<Stores, 'pool' | 'ch'>,
  clock: TestClock,
  ...overrides: AppOverrides[]
): Promise<FastifyInstance> {
  const defaults: ApiDeps = {
    data: { pool: stores.pool, ch: stores.ch },
    jwt: createJwtVerifier({ secret: JWT_SECRET, now: () => clock.now().getTime() }),
    policy: { now: clock.now, retentionDays: DEFAULT_RETENTION_DAYS },
    features: {
      trackingSecret: TRACKING_SECRET,
      webhooks: { secretBox: createSecretBox(WEBHOOK_SECRETS_KEY), urlPolicy: { allowPrivate: true } },
      keyring: createKeyring({ pool: stores.pool, encryptionKey: ENCRYPTION_KEY }),
    },
  };
  const app = await createApiApp(withOverrides(defaults, ...overrides));
  await app.ready();
  return app;
}

/**
 * Closes what a test file opened, one after the other in the order given; one its `beforeAll`
 * never got to open (undefined) is skipped.
 */
export async function closeAll(...opened: ({ close(): unknown } | undefined)[]): Promise<void> {
  for (const resource of opened) await resource?.close();
}

/** Fresh stores (`openStores`) and the app over them (`buildApp`); the stores closed again if the app fails. */
export async function openApp(
  clock: TestClock,
  ...overrides: AppOverrides[]
): Promise<{ stores: Stores; app: FastifyInstance }> {
  const stores = await openStores();
  try {
    return { stores, app: await buildApp(stores, clock, ...overrides) };
  } catch (error) {
    await stores.close();
    throw error;
  }
}

/**
 * What a test file works with: its tenants and clock (`testTenants`), and the app over fresh stores
 * (`openApp`), opened in a `beforeAll` and closed in an `afterAll` (after the file's own ones, which
 * run in reverse order): `app` and `stores` are there once the file's `beforeAll`s run.
 */
export function testApp(prefix: string, ...overrides: AppOverrides[]) {
  const tenants = testTenants(prefix);
  const file = {
    ...tenants,
    app: undefined as unknown as FastifyInstance,
    stores: undefined as unknown as Stores,
  };
  beforeAll(async () => {
    Object.assign(file, await openApp(tenants.clock, ...overrides));
  });
  afterAll(() => closeAll(file.app, file.stores));
  return file;
}

/** A valid dashboard JWT of `tenantId` under the test clock. */
export function jwtFor(
  clock: TestClock,
  tenantId: string,
  role: Role = 'owner',
  expiresInSeconds = 3600,
): string {
  return signDashboardToken({
    secret: JWT_SECRET,
    tenantId,
    role,
    sub: 'user-1',
    expiresInSeconds,
    now: () => clock.now().getTime(),
  });
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A hand-made JWT: any header and payload, HMAC-SHA256 with `secret`, or no signature. */
export function rawJwt(header: object, payload: object, secret?: string): string {
  const signingInput = `${b64url(header)}.${b64url(payload)}`;
  if (secret === undefined) return `${signingInput}.`;
  return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Creates an API key through the API; returns the clear key and its id. */
export async function createKey(
  app: FastifyInstance,
  jwt: string,
  tenantId: string,
  body: { name?: string; scopes: string[]; expiresAt?: string | null; projectId?: string },
): Promise<{ id: string; key: string }> {
  const res = await app.inject({
    method: 'POST',
    url: `/tenants/${tenantId}/api-keys`,
    headers: bearer(jwt),
    payload: { name: body.name ?? 'test key', ...body },
  });
  if (res.statusCode !== 201) throw new Error(`createKey: ${res.statusCode} ${res.body}`);
  const created = res.json() as { id: string; key: string };
  return { id: created.id, key: created.key };
}

/** Creates a project through the API (`POST /projects`); returns its id. */
export async function createProject(app: FastifyInstance, jwt: string, name: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/projects', headers: bearer(jwt), payload: { name } });
  if (res.statusCode !== 201) throw new Error(`createProject: ${res.statusCode} ${res.body}`);
  return (res.json() as { id: string }).id;
}

// --- Events ----------------------------------------------------------------------------------

export type EventInput = { type: string; occurredAt: string; data?: Record<string, unknown> };

let eventCounter = 0;

/** Validated events of one email (ids unique within the run). */
export function eventsOf(tenantId: string, emailId: string, inputs: EventInput[]): DeliveryEvent[] {
  return inputs.map((input) =>
    deliveryEventSchema.parse({
      id: `ev-${++eventCounter}-${suffix()}`,
      tenantId,
      emailId,
      type: input.type,
      occurredAt: input.occurredAt,
      ...(input.data ? { data: input.data } : {}),
    }),
  );
}

/** Projects events through the projector's own sinks: Postgres transaction, then ClickHouse. */
export async function project(
  stores: Pick<Stores, 'pool' | 'ch'>,
  events: readonly DeliveryEvent[],
  mailboxOf?: MailboxOf,
): Promise<void> {
  const batchSize = 2000;
  for (let i = 0; i < events.length; i += batchSize) {
    const result = await applyBatchToPostgres(
      stores.pool,
      events.slice(i, i + batchSize),
      [],
      () => `b-${suffix()}`,
      mailboxOf,
    );
    if (result.outbox) {
      await shipBatch(stores.ch, result.outbox.batchId, result.outbox.rows, result.outbox.dimRows);
      await stores.pool.query('DELETE FROM analytics_outbox WHERE batch_id = $1', [result.outbox.batchId]);
    }
  }
}

export async function insertTemplate(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  name: string,
  subject: string,
) {
  await pool.query('INSERT INTO templates (tenant_id, id, name, subject) VALUES ($1, $2, $3, $4)', [
    tenantId,
    id,
    name,
    subject,
  ]);
}

/** Deterministic PRNG (mulberry32): the generated datasets are the same on every run. */
export { mulberry32 as prng } from '../../../test/support/random.js';

/** 00:00:00.000Z of the UTC day `offset` days from the day of `iso` (negative: earlier). */
export function dayStart(iso: string, offset = 0): Date {
  const ms = Date.parse(iso);
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS + offset * DAY_MS);
}

export const isoDay = (d: Date) => d.toISOString().slice(0, 10);

/**
 * Percent-encoding that also sends a lone surrogate, as its raw (WTF-8) bytes, like an attacker
 * would (`encodeURIComponent` throws on one).
 */
export function pct(s: string): string {
  return [...s]
    .map((ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        const c = ch.charCodeAt(0);
        return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]
          .map((b) => `%${b.toString(16).toUpperCase()}`)
          .join('');
      }
    })
    .join('');
}
