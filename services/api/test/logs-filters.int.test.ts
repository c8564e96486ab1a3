// SPEC §19 on the real API: every filter and the cursor against an independent in-memory
// filter of the generated emails; the per-day counters behind meta.total against count(*).
import { applyBatchToPostgres } from '@tern/projector';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRetentionJob } from '../src/index.js';
import { eventsFor, expectedLog, type GeneratedEmail, generateEmails } from './dataset.js';
import {
  buildApp,
  createClock,
  createKey,
  DAY_MS,
  DEFAULT_RETENTION_DAYS,
  jwtFor,
  NOW,
  openStores,
  type Stores,
  suffix,
} from './support.js';

const clock = createClock(NOW);
const run = suffix();
const A = `logf-a-${run}`;
const B = `logf-b-${run}`;

let stores: Stores;
let app: FastifyInstance;
let emailsA: GeneratedEmail[];
let keyA: string;

type Entry = ReturnType<typeof expectedLog>[number];

/** Folds events in small shuffled batches: entries change status and day across batches. */
async function projectInSmallBatches(events: Parameters<typeof applyBatchToPostgres>[1], size: number) {
  for (let i = 0; i < events.length; i += size) {
    await applyBatchToPostgres(stores.pool, events.slice(i, i + size), [], () => `b-${suffix()}`);
  }
}

const logs = (query: string) =>
  app.inject({ method: 'GET', url: `/emails/logs${query}`, headers: { 'x-api-key': keyA } });

/** Every page by `page`, and every page by following `meta.nextCursor`: both must agree. */
async function walk(filter: string, limit: number) {
  const byPage: Entry[] = [];
  let meta: Record<string, unknown> = {};
  for (let page = 1; ; page++) {
    const res = await logs(`?limit=${limit}&page=${page}${filter}`);
    expect(res.statusCode, res.body).toBe(200);
    byPage.push(...res.json().data);
    meta = res.json().meta;
    if (page >= (meta.totalPages as number)) break;
  }
  const byCursor: Entry[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const res = await logs(`?limit=${limit}${filter}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    byCursor.push(...res.json().data);
    pages.push(res.json().meta.page);
    expect(res.json().meta.total).toBe(meta.total);
    cursor = res.json().meta.nextCursor;
    if (cursor === null) break;
  }
  return { byPage, byCursor, pages, total: meta.total as number };
}

beforeAll(async () => {
  stores = await openStores();
  app = await buildApp(stores, clock);
  const common = { now: NOW, spanDays: 104, templates: ['t1', 't2'] };
  emailsA = generateEmails({ ...common, tenantId: A, count: 260, seed: 21 });
  const emailsB = generateEmails({ ...common, tenantId: B, count: 50, seed: 22 });
  // Shuffled events in batches of 7: most entries are created, moved and re-counted across batches.
  await projectInSmallBatches(eventsFor([...emailsA, ...emailsB], 23), 7);
  keyA = (await createKey(app, jwtFor(clock, A), A, { scopes: ['email:read'] })).key;
});

afterAll(async () => {
  await app?.close();
  await stores?.close();
});

const visible = () => expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
const byId = () => new Map(emailsA.map((e) => [e.id, e]));

describe('GET /emails/logs filters and cursor (SPEC §19)', () => {
  const cases: [string, string, (e: Entry) => boolean][] = [
    ['no filter', '', () => true],
    ['status', '&status=DELIVERED', (e) => e.status === 'DELIVERED'],
    ['status in any case', '&status=bounced', (e) => e.status === 'BOUNCED'],
    [
      'from/to (inclusive)',
      `&from=${new Date(Date.parse(NOW) - 20 * DAY_MS).toISOString()}&to=${new Date(Date.parse(NOW) - 7 * DAY_MS).toISOString()}`,
      (e) =>
        Date.parse(e.createdAt) >= Date.parse(NOW) - 20 * DAY_MS &&
        Date.parse(e.createdAt) <= Date.parse(NOW) - 7 * DAY_MS,
    ],
    [
      'from exactly at an entry',
      '&from=2026-06-05T00:00:00.000Z',
      (e) => e.createdAt >= '2026-06-05T00:00:00.000Z',
    ],
    ['tag', '&tag=receipt', (e) => e.tags.includes('receipt')],
    ['q exact', '&q=e0003%40example.com', (e) => e.toEmail === 'e0003@example.com'],
    ['q prefix, any case', '&q=E00', (e) => e.toEmail.startsWith('e00')],
    [
      'all at once',
      '&status=DELIVERED&tag=digest&q=e0&from=2026-04-01T00:00:00Z',
      (e) =>
        e.status === 'DELIVERED' &&
        e.tags.includes('digest') &&
        e.toEmail.startsWith('e0') &&
        e.createdAt >= '2026-04-01T00:00:00.000Z',
    ],
  ];

  it.each(cases)(
    '%s: pages and cursor give exactly the matching entries, total exact',
    async (_, filter, keep) => {
      const expected = visible().filter(keep);
      expect(expected.length).toBeGreaterThan(0);
      for (const limit of [1, 7, 100]) {
        if (limit === 1 && expected.length > 60) continue;
        const { byPage, byCursor, pages, total } = await walk(filter, limit);
        expect(total).toBe(expected.length);
        expect(byPage).toEqual(expected);
        expect(byCursor).toEqual(expected);
        expect(pages).toEqual(pages.map((_p, i) => i + 1));
      }
    },
  );

  it('a filter that matches nothing: data [], total 0, no cursor', async () => {
    const res = await logs('?q=nobody-at-all');
    expect(res.json()).toEqual({
      data: [],
      meta: { page: 1, limit: 20, total: 0, totalPages: 0, nextCursor: null },
    });
  });

  it('every deep page by number equals the same slice of the log (counter-guided offsets)', async () => {
    const expected = visible();
    for (const page of [1, 2, 13, 14, 15, 36, 37, 38]) {
      const res = await logs(`?limit=7&page=${page}`);
      expect(res.json().data).toEqual(expected.slice((page - 1) * 7, page * 7));
      expect(res.json().meta.total).toBe(expected.length);
    }
    const status = expected.filter((e) => e.status === 'SENT');
    for (const page of [1, 2, 3, 4]) {
      const res = await logs(`?limit=5&page=${page}&status=SENT`);
      expect(res.json().data).toEqual(status.slice((page - 1) * 5, page * 5));
    }
  });

  it('cursor and page agree at the same depth, and page is ignored next to a cursor', async () => {
    const first = (await logs('?limit=10&page=3')).json();
    const viaCursor = (await logs(`?limit=10&page=1&cursor=${first.meta.nextCursor}`)).json();
    expect(viaCursor.meta.page).toBe(4);
    expect(viaCursor.data).toEqual(visible().slice(30, 40));
  });

  it.each([
    ['status=sending', 'status'],
    ['status=', 'status'],
    ['from=yesterday', 'from'],
    ['to=2026-13-01T00:00:00Z', 'to'],
    ['from=2026-06-10T00:00:00Z&to=2026-06-01T00:00:00Z', 'from'],
    ['tag=', 'tag'],
    [`tag=${'x'.repeat(257)}`, 'tag'],
    ['q=', 'q'],
    ['cursor=not-a-cursor!', 'cursor'],
    ['cursor=eyJ2IjoxfQ', 'cursor'],
    [
      `cursor=${Buffer.from('{"v":1,"t":"2026-06-01T00:00:00.000000","i":"x","p":0}').toString('base64url')}`,
      'cursor',
    ],
    [`cursor=${Buffer.from('not json').toString('base64url')}`, 'cursor'],
  ])('%s → 400 naming %s', async (query, field) => {
    const res = await logs(`?${query}`);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(res.json().message).toContain(field);
  });

  it('only the caller’s tenant, with filters and cursors too', async () => {
    const ids = byId();
    const { byCursor } = await walk('&status=DELIVERED', 50);
    for (const e of byCursor) expect(ids.get(e.id)?.toEmail).toBe(e.toEmail);
  });
});

describe('email_log_counts (the counters behind meta.total)', () => {
  const drift = async () =>
    (
      await stores.pool.query<{
        tenant_id: string;
        day: string;
        status: string;
        counted: string;
        actual: string;
      }>(
        `WITH actual AS (
           SELECT tenant_id, (created_at AT TIME ZONE 'UTC')::date AS day, status, count(*) AS n
             FROM email_logs WHERE created_at IS NOT NULL GROUP BY 1, 2, 3),
         counted AS (SELECT tenant_id, day, status, n FROM email_log_counts WHERE n <> 0)
         SELECT coalesce(a.tenant_id, c.tenant_id) AS tenant_id, coalesce(a.day, c.day)::text AS day,
                coalesce(a.status, c.status) AS status, c.n::text AS counted, a.n::text AS actual
           FROM actual a FULL JOIN counted c USING (tenant_id, day, status)
          WHERE a.n IS DISTINCT FROM c.n`,
      )
    ).rows;

  it('equal count(*) per tenant, day and status after shuffled small batches', async () => {
    expect(await drift()).toEqual([]);
    const { rows } = await stores.pool.query<{ n: string }>(
      'SELECT sum(n)::text AS n FROM email_log_counts WHERE tenant_id = $1',
      [A],
    );
    expect(Number(rows[0]?.n)).toBe(emailsA.length);
  });

  it('a replay of every event changes nothing', async () => {
    const before = (await stores.pool.query('SELECT * FROM email_log_counts ORDER BY 1, 2, 3')).rows;
    const replay = eventsFor(emailsA.slice(0, 40), 24);
    // Fresh event ids: a second, different event set for the same emails moves nothing the fold
    // already has (same statuses, same createdAt); the counters must not move either.
    await projectInSmallBatches(replay, 11);
    expect(await drift()).toEqual([]);
    expect((await stores.pool.query('SELECT * FROM email_log_counts ORDER BY 1, 2, 3')).rows).toEqual(before);
  });

  it('the retention job deletes the counters of expired days with the rows', async () => {
    const job = createRetentionJob({
      pool: stores.pool,
      ch: stores.ch,
      now: clock.now,
      defaultRetentionDays: DEFAULT_RETENTION_DAYS,
      batchSize: 50,
    });
    const result = await job.runOnce();
    expect(result.deletedLogs).toBeGreaterThan(0);
    expect(await drift()).toEqual([]);
    const { rows } = await stores.pool.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM email_log_counts WHERE day < '2026-03-17'",
    );
    expect(rows[0]?.n).toBe('0');
    // The API answers as before: the cut-off already hid those days.
    const { byPage, total } = await walk('', 100);
    expect(byPage).toEqual(visible());
    expect(total).toBe(visible().length);
  });
});
