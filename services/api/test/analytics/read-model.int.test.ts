// Repeated reads memoised on the read-model feed (issue 10): with a listening feed, a repeated logs
// page or dashboard load costs no Postgres query and no engine query, and every change committed
// for the tenant — a projected batch, an erasure, a retention change, a shipped analytics batch —
// shows in the next read (at once on the instance that made it; on the others when the notice
// arrives). Without a listening feed every read queries the stores, as before. Real Postgres server,
// real PGlite, real chDB; the test only counts the queries that reach them.
import type { ClickHouseClient } from '@clickhouse/client';
import { applyBatchToPostgres, completeOutbox, shipBatch } from '@tern/projector';
import { lastBatchAt } from '@tern/read-models';
import {
  createPostgres,
  createReadModelFeed,
  migratePostgres,
  type PostgresStore,
  READ_MODEL_APPLICATION_NAME,
  type ReadModelFeed,
} from '@tern/stores';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, waitFor } from '../../../../test/support/services.js';
import { bearer, buildApp, eventsOf, jwtFor, openStores, type Stores, testTenants } from '../support.js';

const { clock, A, B } = testTenants('feed');
let stores: Stores;
let feed: ReadModelFeed;
let app: FastifyInstance;
/**
 * An instance whose feed listens on another database: live, but it never hears this database's
 * notices — what any instance is in the moments before a notice arrives. Only the changes it
 * makes itself can move its versions.
 */
let deaf: { app: FastifyInstance; feed: ReadModelFeed; db: { drop(): Promise<void> }; pool: pg.Pool };
const counted = { pg: 0, engine: 0 };

/** The real object, with calls of `method` counted in `counted[which]`. */
function counting<T extends object>(target: T, method: string, which: keyof typeof counted): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === method) {
        return (...args: unknown[]) => {
          counted[which]++;
          return value.apply(t, args);
        };
      }
      return value.bind(t);
    },
  });
}

const queued = (tenantId: string, emailId: string, toEmail = `${emailId}@example.com`) =>
  eventsOf(tenantId, emailId, [
    {
      type: 'email.queued',
      occurredAt: '2026-06-15T09:00:00.000Z',
      data: { toEmail, subject: `subject of ${emailId}`, templateId: 't1' },
    },
    {
      type: 'email.sent',
      occurredAt: '2026-06-15T09:00:01.000Z',
      data: { provider: 'ses', messageId: `m-${emailId}` },
    },
  ]);

/** The projector's own steps: the Postgres transaction (its notice), ClickHouse, the outbox delete (its notice). */
async function project(pool: pg.Pool, ch: ClickHouseClient, events: ReturnType<typeof queued>) {
  const result = await applyBatchToPostgres(pool, events, [], () => `b-${crypto.randomUUID()}`);
  if (result.outbox) {
    await shipBatch(ch, result.outbox.batchId, result.outbox.rows);
    await completeOutbox(pool, result.outbox.batchId, result.outbox.rows);
  }
}

async function get(url: string, tenantId = A, on = app) {
  const res = await on.inject({ method: 'GET', url, headers: bearer(jwtFor(clock, tenantId)) });
  expect(res.statusCode, res.body).toBe(200);
  return res;
}

/** Queries a request made: [Postgres, engine]. */
async function cost(fn: () => Promise<unknown>): Promise<[number, number]> {
  const before = { ...counted };
  await fn();
  return [counted.pg - before.pg, counted.engine - before.engine];
}

beforeAll(async () => {
  stores = await openStores();
  // A lost connection is noticed at once (its socket closes); reopened within the check interval.
  feed = createReadModelFeed({
    pool: stores.pool,
    connection: 'dedicated',
    checkIntervalMs: 1000,
    lastBatchAt,
  });
  app = await buildApp(
    { pool: counting(stores.pool, 'query', 'pg'), ch: counting(stores.ch, 'query', 'engine') },
    clock,
    { data: { readModel: feed } },
  );
  expect(await feed.ready()).toBe(true);
  const elsewhere = await createFreshDatabase();
  const elsewherePool = new pg.Pool({ connectionString: elsewhere.url, max: 2 });
  elsewherePool.on('error', () => undefined);
  await migratePostgres(elsewherePool);
  const deafFeed = createReadModelFeed({ pool: elsewherePool, connection: 'dedicated', lastBatchAt });
  deaf = {
    app: await buildApp(stores, clock, { data: { readModel: deafFeed } }),
    feed: deafFeed,
    db: elsewhere,
    pool: elsewherePool,
  };
  expect(await deafFeed.ready()).toBe(true);
  for (const i of [1, 2, 3]) await project(stores.pool, stores.ch, queued(A, `a${i}`));
  await project(stores.pool, stores.ch, queued(B, 'b1'));
});

afterAll(async () => {
  await deaf?.app.close();
  await deaf?.feed.close();
  await deaf?.pool.end();
  await deaf?.db.drop();
  await app?.close();
  await feed?.close();
  await stores?.close();
});

describe('logs pages memoised on the feed', () => {
  it('a repeated page costs no query and answers the same bytes and freshness', async () => {
    const first = await get('/emails/logs?limit=2');
    expect(first.json().meta.total).toBe(3);
    expect(first.headers['x-tern-as-of']).toEqual(expect.any(String));
    let again: Awaited<ReturnType<typeof get>> | undefined;
    expect(await cost(async () => (again = await get('/emails/logs?limit=2')))).toEqual([0, 0]);
    expect(again?.body).toBe(first.body);
    expect(again?.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(again?.headers['x-tern-as-of']).toBe(first.headers['x-tern-as-of']);
    // Another page, filter or cursor is another answer.
    const second = await get('/emails/logs?limit=2&page=2');
    expect(second.json().data).toHaveLength(1);
    const byCursor = await get(`/emails/logs?limit=2&cursor=${first.json().meta.nextCursor}`);
    expect(byCursor.json().data).toEqual(second.json().data);
  });

  it('another tenant’s batch costs this tenant nothing; its own batch shows in the next read', async () => {
    await get('/emails/logs');
    const b = feed.version('logs', B);
    await project(stores.pool, stores.ch, queued(B, 'b2'));
    await waitFor(() => feed.version('logs', B) !== b, { timeoutMs: 5000 });
    expect(await cost(() => get('/emails/logs'))).toEqual([0, 0]);

    const asOf = (await get('/emails/logs')).headers['x-tern-as-of'];
    await project(stores.pool, stores.ch, queued(A, 'a4'));
    const after = await waitFor(
      async () => {
        const res = await get('/emails/logs');
        return res.json().meta.total === 4 ? res : null;
      },
      { timeoutMs: 5000, description: 'the new entry in the memoised page' },
    );
    expect(after.json().data.map((e: { id: string }) => e.id)).toContain('a4');
    expect(Date.parse(String(after.headers['x-tern-as-of']))).toBeGreaterThan(Date.parse(String(asOf)));
  });

  it('an erasure is seen at once on the instance that erased, before any notice', async () => {
    expect((await get('/emails/logs', A, deaf.app)).body).toContain('a1@example.com');
    expect(await cost(() => get('/emails/logs', A, deaf.app))).toEqual([0, 0]);
    const erased = await deaf.app.inject({
      method: 'POST',
      url: '/contacts/erase',
      headers: bearer(jwtFor(clock, A)),
      payload: { email: 'a1@example.com' },
    });
    expect(erased.statusCode, erased.body).toBe(202);
    const after = await get('/emails/logs', A, deaf.app);
    expect(after.body).not.toContain('a1@example.com');
    expect(after.json().data.find((e: { id: string }) => e.id === 'a1')).toMatchObject({
      toEmail: null,
      subject: null,
    });
    // The other instance hears the erasure's notice.
    await waitFor(async () => !(await get('/emails/logs')).body.includes('a1@example.com'), {
      timeoutMs: 5000,
    });
  });

  it('a retention change is seen at once on the instance that made it, before any notice', async () => {
    const settings = (retentionDays: number | null) =>
      deaf.app.inject({
        method: 'PUT',
        url: `/tenants/${A}/settings`,
        headers: bearer(jwtFor(clock, A, 'owner')),
        payload: { retentionDays },
      });
    const total = async () => (await get('/emails/logs', A, deaf.app)).json().meta.total;
    // Every entry is from 09:00 on the 15th; two days on, a 1-day retention (cut-off: the 16th,
    // 00:00) hides them, a 2-day one shows them again.
    clock.advance(2 * 86_400_000);
    expect(await total()).toBe(4);
    expect((await settings(1)).statusCode).toBe(200);
    expect(await total()).toBe(0);
    expect((await settings(2)).statusCode).toBe(200);
    expect(await total()).toBe(4);
    expect((await settings(null)).statusCode).toBe(200);
    expect(await total()).toBe(4);
    clock.advance(-2 * 86_400_000);
  });

  it('while the feed cannot listen, every read queries Postgres and sees a change made behind its back', async () => {
    await sql(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [READ_MODEL_APPLICATION_NAME],
    );
    await waitFor(() => !feed.live, { timeoutMs: 5000, intervalMs: 5 });
    // A write nobody announces (only a feed that is down could miss one).
    await sql(`UPDATE email_logs SET subject = 'changed by hand' WHERE tenant_id = $1 AND id = 'a2'`, [A]);
    expect(feed.live).toBe(false);
    const [queries] = await cost(async () => {
      expect((await get('/emails/logs')).body).toContain('changed by hand');
      expect((await get('/emails/logs')).body).toContain('changed by hand');
    });
    expect(queries).toBeGreaterThanOrEqual(4);
    await waitFor(() => feed.live, { timeoutMs: 10_000 });
    // Back with a new epoch: nothing memoised before the gap is served.
    await sql(`UPDATE email_logs SET subject = 'changed again' WHERE tenant_id = $1 AND id = 'a2'`, [A]);
    expect((await get('/emails/logs')).body).toContain('changed again');
    expect(await cost(() => get('/emails/logs'))).toEqual([0, 0]);
  });
});

describe('analytics memoised on the feed', () => {
  it('a repeated summary costs no query; a batch counts once ClickHouse has it', async () => {
    const first = (await get('/analytics/summary?days=7')).json();
    expect(await cost(() => get('/analytics/summary?days=7'))).toEqual([0, 0]);
    // Committed in Postgres, not shipped: ClickHouse's answer is still the old one.
    const result = await applyBatchToPostgres(
      stores.pool,
      queued(A, 'a5'),
      [],
      () => `b-${crypto.randomUUID()}`,
    );
    const version = feed.version('analytics', A);
    expect((await get('/analytics/summary?days=7')).json().totals).toEqual(first.totals);
    await shipBatch(stores.ch, result.outbox!.batchId, result.outbox!.rows);
    await completeOutbox(stores.pool, result.outbox!.batchId, result.outbox!.rows);
    await waitFor(() => feed.version('analytics', A) !== version, { timeoutMs: 5000 });
    expect((await get('/analytics/summary?days=7')).json().totals.total).toBe(first.totals.total + 1);
  });
});

describe('on the embedded PGlite (the notice comes back with the COMMIT)', () => {
  let store: PostgresStore;
  let embeddedFeed: ReadModelFeed;
  let embedded: FastifyInstance;

  beforeAll(async () => {
    store = await createPostgres({ dataDir: tempDir('tern-feed-api-pglite-') });
    await migratePostgres(store.pool);
    embeddedFeed = createReadModelFeed({ pool: store.pool, connection: 'shared', lastBatchAt });
    embedded = await buildApp(
      { pool: counting(store.pool, 'query', 'pg'), ch: counting(stores.ch, 'query', 'engine') },
      clock,
      { data: { readModel: embeddedFeed } },
    );
    expect(await embeddedFeed.ready()).toBe(true);
  });

  afterAll(async () => {
    await embedded?.close();
    await embeddedFeed?.close();
    await store?.close();
  });

  it('memoises a repeated page and shows a projected batch in the very next read', async () => {
    const tenant = `${A}-embedded`;
    await project(store.pool, stores.ch, queued(tenant, 'e1'));
    expect((await get('/emails/logs', tenant, embedded)).json().meta.total).toBe(1);
    expect(await cost(() => get('/emails/logs', tenant, embedded))).toEqual([0, 0]);
    await project(store.pool, stores.ch, queued(tenant, 'e2'));
    expect((await get('/emails/logs', tenant, embedded)).json().meta.total).toBe(2);
  });
});

async function sql(text: string, values: unknown[]) {
  return stores.pool.query(text, values);
}
