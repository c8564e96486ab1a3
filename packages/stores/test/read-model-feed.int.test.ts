// The read-model feed (issue 10): what the api memoises on. On a real Postgres server (a listening
// connection of its own) and on PGlite (the one session hears its own commits). A version must move
// for every change committed for a tenant, only at commit, and be null whenever a change could go
// unheard.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, freshPool, tempDir, waitFor } from '../../../test/support/services.js';
import {
  createPostgres,
  createReadModelFeed,
  migratePostgres,
  notifyReadModel,
  type PostgresStore,
  READ_MODEL_APPLICATION_NAME,
  READ_MODEL_CHANNEL,
  type ReadModelFeed,
  readModelPayload,
} from '../src/index.js';

/** The reader packages/read-models provides (its `lastBatchAt`); packages/stores sits below it. */
const lastBatchAt = async (client: pg.ClientBase) =>
  (
    await client.query<{ last_batch_at: Date | null }>(
      "SELECT last_batch_at FROM projection_status WHERE name = 'projector'",
    )
  ).rows[0]?.last_batch_at ?? null;

/** Runs `fn` on a client of `pool`, released after. */
async function onClient(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  try {
    await fn(client);
  } finally {
    client.release();
  }
}

/** A `logs` notice of tenant `a`, sent in a transaction that rolls back. */
async function rolledBackNotice(client: pg.PoolClient): Promise<void> {
  await client.query('BEGIN');
  await notifyReadModel(client, { kind: 'logs', tenants: ['a'] });
  await client.query('ROLLBACK');
}

describe('readModelPayload', () => {
  it('keeps a payload under the 8000 bytes of a NOTIFY: a long tenant list becomes every tenant', () => {
    expect(JSON.parse(readModelPayload({ kind: 'logs', tenants: ['a', 'b', 'a'] }))).toEqual({
      kind: 'logs',
      tenants: ['a', 'b'],
    });
    const many = Array.from({ length: 200 }, (_, i) => `tenant-${'x'.repeat(100)}-${i}`);
    const payload = readModelPayload({ kind: 'analytics', tenants: many });
    expect(JSON.parse(payload)).toEqual({ kind: 'analytics', tenants: null });
    expect(Buffer.byteLength(payload)).toBeLessThan(8000);
  });
});

describe('on a Postgres server (a connection of its own)', () => {
  const db = freshPool({ max: 4, prepare: migratePostgres });
  let feed: ReadModelFeed;

  beforeAll(async () => {
    await db.open();
    await db.pool.query(
      `INSERT INTO projection_status (name, last_batch_at) VALUES ('projector', '2026-06-15T10:00:00Z')`,
    );
    feed = createReadModelFeed({ pool: db.pool, connection: 'dedicated', checkIntervalMs: 100, lastBatchAt });
  });

  afterAll(async () => {
    await feed?.close();
    await db.close();
  });

  it('is live once it listens, with the last batch time as its first freshness', async () => {
    expect(await feed.ready()).toBe(true);
    expect(feed.live).toBe(true);
    expect(feed.asOf()?.toISOString()).toBe('2026-06-15T10:00:00.000Z');
    expect(feed.version('logs', 'a')).toEqual(expect.any(String));
  });

  it('moves a tenant’s version at the commit of its change, never before, and only its own', async () => {
    const a = feed.version('logs', 'a');
    const b = feed.version('logs', 'b');
    const analyticsA = feed.version('analytics', 'a');
    await onClient(db.pool, async (client) => {
      await client.query('BEGIN');
      await notifyReadModel(client, { kind: 'logs', tenants: ['a'], asOf: '2026-06-15T11:00:00.000Z' });
      // Uncommitted: nothing may be heard (a memoised answer stays right).
      await new Promise((r) => setTimeout(r, 200));
      expect(feed.version('logs', 'a')).toBe(a);
      await client.query('COMMIT');
    });
    await waitFor(() => feed.version('logs', 'a') !== a, { timeoutMs: 5000 });
    expect(feed.version('logs', 'b')).toBe(b);
    expect(feed.version('analytics', 'a')).toBe(analyticsA);
    expect(feed.asOf()?.toISOString()).toBe('2026-06-15T11:00:00.000Z');
  });

  it('never hears a rolled-back change', async () => {
    const a = feed.version('logs', 'a');
    await onClient(db.pool, rolledBackNotice);
    // A later committed notice of another tenant proves the earlier one would have arrived by now.
    const c = feed.version('logs', 'c');
    await notifyReadModel(db.pool, { kind: 'logs', tenants: ['c'] });
    await waitFor(() => feed.version('logs', 'c') !== c, { timeoutMs: 5000 });
    expect(feed.version('logs', 'a')).toBe(a);
  });

  it('every tenant, a reset and an unreadable notice move every version; asOf never goes back', async () => {
    for (const change of [
      () => notifyReadModel(db.pool, { kind: 'settings', tenants: null }),
      () => notifyReadModel(db.pool, { kind: 'reset' }),
      () => db.pool.query('SELECT pg_notify($1, $2)', [READ_MODEL_CHANNEL, 'not json']),
    ]) {
      const before = ['a', 'b', 'zz'].map((t) => feed.version('settings', t));
      await change();
      await waitFor(() => feed.version('settings', 'a') !== before[0], { timeoutMs: 5000 });
      expect(['a', 'b', 'zz'].map((t) => feed.version('settings', t))).toEqual(
        before.map((v) => expect.not.stringMatching(`^${v?.replaceAll('.', '\\.')}$`)),
      );
    }
    const b = feed.version('logs', 'b');
    await notifyReadModel(db.pool, { kind: 'logs', tenants: ['b'], asOf: '2026-06-15T09:00:00.000Z' });
    await waitFor(() => feed.version('logs', 'b') !== b, { timeoutMs: 5000 });
    expect(feed.asOf()?.toISOString()).toBe('2026-06-15T11:00:00.000Z');
  });

  it('a change of this process is seen at once, before its notice arrives', () => {
    const a = feed.version('logs', 'a');
    feed.changed({ kind: 'logs', tenants: ['a'] });
    expect(feed.version('logs', 'a')).not.toBe(a);
  });

  it('has no version while its connection is lost, and a new epoch once back', async () => {
    const before = feed.version('logs', 'a');
    const killed = await db.pool.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = $1`,
      [READ_MODEL_APPLICATION_NAME],
    );
    expect(killed.rows.some((r) => r.ok)).toBe(true);
    await waitFor(() => feed.version('logs', 'a') === null, { timeoutMs: 5000, intervalMs: 5 });
    expect(feed.live).toBe(false);
    await waitFor(() => feed.live, { timeoutMs: 10_000 });
    const after = feed.version('logs', 'a');
    expect(after).not.toBeNull();
    expect(after).not.toBe(before);
  });
});

describe('where notices do not reach the listening connection', () => {
  it('never goes live (what a transaction-mode pooler in DATABASE_URL would do)', async () => {
    // The feed listens on database X (its pool's options) while the pool's own queries — and so
    // its probe notice — run on database Y: a notice committed elsewhere never arrives.
    const x = await createFreshDatabase();
    const y = await createFreshDatabase();
    const poolX = new pg.Pool({ connectionString: x.url, max: 1 });
    const poolY = new pg.Pool({ connectionString: y.url, max: 1 });
    for (const p of [poolX, poolY]) {
      p.on('error', () => undefined);
      await migratePostgres(p);
    }
    const misrouted = new Proxy(poolX, {
      get: (target, prop) => (prop === 'query' ? poolY.query.bind(poolY) : Reflect.get(target, prop)),
    });
    const feed = createReadModelFeed({
      pool: misrouted,
      connection: 'dedicated',
      checkIntervalMs: 300,
      lastBatchAt,
    });
    try {
      expect(await feed.ready(2_000)).toBe(false);
      expect(feed.version('logs', 'a')).toBeNull();
    } finally {
      await feed.close();
      await poolX.end();
      await poolY.end();
      await x.drop();
      await y.drop();
    }
  });
});

describe('on PGlite (one session: the committing connection hears it)', () => {
  let store: PostgresStore;
  let feed: ReadModelFeed;

  beforeAll(async () => {
    store = await createPostgres({ dataDir: tempDir('tern-feed-pglite-') });
    await migratePostgres(store.pool);
    feed = createReadModelFeed({ pool: store.pool, connection: 'shared', lastBatchAt });
  });

  afterAll(async () => {
    await feed?.close();
    await store?.close();
  });

  it('moves the version by the time COMMIT returns, and not for a rollback', async () => {
    expect(await feed.ready()).toBe(true);
    const a = feed.version('logs', 'a');
    const b = feed.version('logs', 'b');
    await onClient(store.pool, async (client) => {
      await rolledBackNotice(client);
      expect(feed.version('logs', 'a')).toBe(a);
      await client.query('BEGIN');
      await notifyReadModel(client, { kind: 'logs', tenants: ['a'] });
      expect(feed.version('logs', 'a')).toBe(a);
      await client.query('COMMIT');
      expect(feed.version('logs', 'a')).not.toBe(a);
      expect(feed.version('logs', 'b')).toBe(b);
    });
  });
});
