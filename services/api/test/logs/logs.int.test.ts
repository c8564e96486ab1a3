import { retentionCutoff } from '@tern/domain';
import { applyBatchToPostgres } from '@tern/projector';
import { logsPage } from '@tern/read-models';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logCounterDrift } from '../../../../test/support/log-counter-drift.js';
import { eventsFor, expectedLog, type GeneratedEmail, generateEmails } from '../datasets.js';
import {
  bearer,
  buildApp,
  closeAll,
  createClock,
  createKey,
  createProject,
  DAY_MS,
  DEFAULT_RETENTION_DAYS,
  eventsOf,
  jwtFor,
  NOW,
  openApp,
  project,
  type Stores,
  suffix,
  testApp,
  testTenants,
} from '../support.js';

describe('logs', () => {
  const file = testApp('logs');
  const { clock, A, B } = file;

  let emailsA: GeneratedEmail[];
  let emailsB: GeneratedEmail[];
  let tokenA: string;
  let readKeyA: string;
  let readKeyB: string;
  let sendOnlyKeyA: string;

  const logs = (query: string, headers: Record<string, string> = { 'x-api-key': readKeyA }) =>
    file.app.inject({ method: 'GET', url: `/emails/logs${query}`, headers });

  /** Every page of the log, concatenated. */
  async function allPages(limit: number, headers?: Record<string, string>) {
    const entries = [];
    for (let page = 1; ; page++) {
      const res = await logs(`?page=${page}&limit=${limit}`, headers);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      entries.push(...body.data);
      if (page >= body.meta.totalPages) return { entries, meta: body.meta };
    }
  }

  beforeAll(async () => {
    tokenA = jwtFor(clock, A, 'admin');
    const common = { now: NOW, spanDays: 104, templates: ['t1', 't2'] };
    emailsA = generateEmails({ ...common, tenantId: A, count: 230, seed: 11 });
    emailsB = generateEmails({ ...common, tenantId: B, count: 60, seed: 12 });
    await project(file.stores, eventsFor([...emailsA, ...emailsB], 13));
    readKeyA = (await createKey(file.app, tokenA, A, { scopes: ['email:read'] })).key;
    sendOnlyKeyA = (await createKey(file.app, tokenA, A, { scopes: ['email:send', 'templates:read'] })).key;
    readKeyB = (await createKey(file.app, jwtFor(clock, B), B, { scopes: ['email:read'] })).key;
  });

  describe('GET /emails/logs', () => {
    describe('200', () => {
      it('lists every visible entry once, newest first, id desc (byte order) on equal createdAt', async () => {
        const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
        const { entries, meta } = await allPages(17);
        expect(entries).toEqual(expected);
        expect(meta).toEqual({
          page: meta.page,
          limit: 17,
          total: expected.length,
          totalPages: Math.ceil(expected.length / 17),
          nextCursor: null,
        });
        const ties = entries
          .filter((e: { id: string }) => ['Tie-B', 'tie-a', 'tie-C'].includes(e.id))
          .map((e: { id: string }) => e.id);
        expect(ties).toEqual(['tie-a', 'tie-C', 'Tie-B']);
      });

      it('defaults to page 1 and limit 20, with meta', async () => {
        const res = await logs('');
        expect(res.statusCode).toBe(200);
        const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
        expect(res.json()).toEqual({
          data: expected.slice(0, 20),
          meta: {
            page: 1,
            limit: 20,
            total: expected.length,
            totalPages: Math.ceil(expected.length / 20),
            nextCursor: expect.any(String),
          },
        });
      });

      it('pages are disjoint slices: page 3 of limit 7 is entries 14..20', async () => {
        const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);
        const res = await logs('?page=3&limit=7');
        expect(res.json().data).toEqual(expected.slice(14, 21));
      });

      it('a page past the end has data [] and the true meta', async () => {
        const total = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS).length;
        for (const page of [Math.ceil(total / 100) + 1, 99_999_999, 9_007_199_254_740_991]) {
          const res = await logs(`?page=${page}&limit=100`);
          expect(res.statusCode, res.body).toBe(200);
          expect(res.json()).toEqual({
            data: [],
            meta: { page, limit: 100, total, totalPages: Math.ceil(total / 100), nextCursor: null },
          });
        }
      });

      it('carries provider and messageId only once sent, createdAt as ISO, tags as an array', async () => {
        const data = (await logs('?limit=100')).json().data as Record<string, unknown>[];
        for (const entry of data) {
          expect(Object.keys(entry).sort()).toEqual(
            [
              'clicked',
              'complained',
              'createdAt',
              'id',
              'messageId',
              'opened',
              'provider',
              'status',
              'subject',
              'tags',
              'toEmail',
            ].sort(),
          );
          for (const flag of ['opened', 'clicked', 'complained']) expect(typeof entry[flag]).toBe('boolean');
          expect(entry.createdAt).toBe(new Date(entry.createdAt as string).toISOString());
          expect(Array.isArray(entry.tags)).toBe(true);
          const sent = ['SENT', 'DELAYED', 'DELIVERED', 'BOUNCED'].includes(entry.status as string);
          expect(entry.provider === null).toBe(!sent);
          expect(entry.messageId === null).toBe(!sent);
        }
      });

      it('hides entries before the retention cut-off: the cut-off instant is visible, 1 ms before is not', async () => {
        const ids = (await allPages(100)).entries.map((e: { id: string }) => e.id);
        expect(ids).toContain('edge-90-start');
        expect(ids).not.toContain('edge-90-prev');
        // A tenant override moves the cut-off at once.
        const put = await file.app.inject({
          method: 'PUT',
          url: `/tenants/${A}/settings`,
          headers: bearer(tokenA),
          payload: { retentionDays: 10 },
        });
        expect(put.statusCode).toBe(200);
        try {
          const { entries, meta } = await allPages(100);
          expect(entries).toEqual(expectedLog(emailsA, NOW, 10));
          expect(meta.total).toBe(expectedLog(emailsA, NOW, 10).length);
          expect(entries.map((e: { id: string }) => e.id)).toContain('edge-10-start');
          expect(entries.map((e: { id: string }) => e.id)).not.toContain('edge-10-prev');
        } finally {
          await file.app.inject({
            method: 'PUT',
            url: `/tenants/${A}/settings`,
            headers: bearer(tokenA),
            payload: { retentionDays: null },
          });
        }
      });

      it('moves the cut-off with the clock (day-granular)', async () => {
        const clockLater = createClock('2026-06-16T00:00:00.000Z');
        const later = await buildApp(file.stores, clockLater);
        try {
          const res = await later.inject({
            url: '/emails/logs?limit=100&page=1',
            headers: { 'x-api-key': readKeyA },
          });
          expect(res.json().meta.total).toBe(expectedLog(emailsA, '2026-06-16T00:00:00.000Z', 90).length);
          expect(res.json().meta.total).toBeLessThan(expectedLog(emailsA, NOW, 90).length);
        } finally {
          await later.close();
        }
      });

      it('accepts the key in Authorization: Bearer, and a tenant JWT of any role', async () => {
        const expected = expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS).slice(0, 5);
        for (const headers of [bearer(readKeyA), bearer(tokenA), bearer(jwtFor(clock, A, 'member'))]) {
          const res = await logs('?limit=5', headers);
          expect(res.statusCode).toBe(200);
          expect(res.json().data).toEqual(expected);
        }
      });

      it('shows only the credential’s tenant, whatever the credential', async () => {
        const bIds = new Set(expectedLog(emailsB, NOW, DEFAULT_RETENTION_DAYS).map((e) => e.id));
        const forB = await allPages(100, { 'x-api-key': readKeyB });
        expect(forB.entries).toEqual(expectedLog(emailsB, NOW, DEFAULT_RETENTION_DAYS));
        for (const headers of [{ 'x-api-key': readKeyA }, bearer(tokenA)]) {
          const forA = await allPages(100, headers);
          // Ids overlap between the tenants (same generator); the entries must be A's own.
          expect(forA.entries).toEqual(expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS));
          expect(forA.entries.some((e: { id: string }) => bIds.has(e.id))).toBe(true);
        }
      });

      it('carries X-Tern-As-Of when something was projected, and not before', async () => {
        const { rows } = await file.stores.pool.query<{ at: Date }>(
          "SELECT last_batch_at AS at FROM projection_status WHERE name = 'projector'",
        );
        const withStatus = await logs('?limit=1');
        expect(withStatus.headers['x-tern-as-of']).toBe(rows[0]!.at.toISOString());
        const client = await file.stores.pool.connect();
        try {
          await client.query('BEGIN');
          await client.query("DELETE FROM projection_status WHERE name = 'projector'");
          // The app reads through its own pool: commit the delete, then put the row back.
          await client.query('COMMIT');
          const without = await logs('?limit=1');
          expect(without.statusCode).toBe(200);
          expect(without.headers['x-tern-as-of']).toBeUndefined();
          expect(Object.keys(without.json())).toEqual(['data', 'meta']);
        } finally {
          await client.query(
            "INSERT INTO projection_status (name, last_batch_at) VALUES ('projector', $1) ON CONFLICT (name) DO UPDATE SET last_batch_at = EXCLUDED.last_batch_at",
            [rows[0]!.at],
          );
          client.release();
        }
      });
    });

    describe('400', () => {
      it.each([
        ['page=0', 'page'],
        ['page=-1', 'page'],
        ['page=1.5', 'page'],
        ['page=abc', 'page'],
        ['page=', 'page'],
        ['page=1&page=2', 'page'],
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=2.5', 'limit'],
        ['limit=ten', 'limit'],
        ['limit=', 'limit'],
        ['limit=1e1', 'limit'],
      ])('%s names %s', async (query, field) => {
        const res = await logs(`?${query}`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
        expect(res.json().message).toContain(field);
      });
    });

    describe('401', () => {
      it('without a credential', async () => {
        const res = await file.app.inject({ method: 'GET', url: '/emails/logs' });
        expect(res.statusCode).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      });

      it('with an unknown key of valid form, or a malformed one, with the same message for both keys', async () => {
        const unknown = await logs('', { 'x-api-key': `tern_${'A'.repeat(40)}` });
        const garbage = await logs('', { 'x-api-key': 'tern_short' });
        expect(unknown.statusCode).toBe(401);
        expect(garbage.statusCode).toBe(401);
        expect(unknown.json().message).toBe(garbage.json().message);
      });

      it('comes before validation: a bad query without a credential is 401', async () => {
        expect((await file.app.inject({ method: 'GET', url: '/emails/logs?page=0' })).statusCode).toBe(401);
      });
    });

    describe('403', () => {
      it('a key without email:read gets the exact message and missingScope', async () => {
        const res = await logs('', { 'x-api-key': sendOnlyKeyA });
        expect(res.statusCode).toBe(403);
        expect(res.json()).toEqual({
          statusCode: 403,
          error: 'Forbidden',
          message: 'Missing required API key scope',
          code: 'MISSING_SCOPE',
          missingScope: 'email:read',
        });
      });
    });
  });
});

// SPEC §19 on the real API: every filter and the cursor against an independent in-memory
// filter of the generated emails; the per-day counters behind meta.total against count(*).
describe('every filter and the cursor', () => {
  const { clock, A, B, run } = testTenants('logf');
  /** Entries exactly on, just before and just after hour and day boundaries (the hour counters). */
  const C = `logf-c-${run}`;

  let stores: Stores;
  let app: FastifyInstance;
  let emailsA: GeneratedEmail[];
  let emailsC: GeneratedEmail[];
  let keyA: string;
  /** A's two projects (created through the API, so a key can be bound to one). */
  let P1: string;
  let P2: string;
  /** A key of A bound to P1. */
  let boundKey: string;

  type Entry = ReturnType<typeof expectedLog>[number];

  /** Folds events in small shuffled batches: entries change status and day across batches. */
  async function projectInSmallBatches(events: Parameters<typeof applyBatchToPostgres>[1], size: number) {
    for (let i = 0; i < events.length; i += size) {
      await applyBatchToPostgres(stores.pool, events.slice(i, i + size), [], () => `b-${suffix()}`);
    }
  }

  const logs = (query: string, key = keyA) =>
    app.inject({ method: 'GET', url: `/emails/logs${query}`, headers: { 'x-api-key': key } });

  /** Every page by `page`, and every page by following `meta.nextCursor`: both must agree. */
  async function walk(filter: string, limit: number, key = keyA) {
    const byPage: Entry[] = [];
    let meta: Record<string, unknown> = {};
    for (let page = 1; ; page++) {
      const res = await logs(`?limit=${limit}&page=${page}${filter}`, key);
      expect(res.statusCode, res.body).toBe(200);
      byPage.push(...res.json().data);
      meta = res.json().meta;
      if (page >= (meta.totalPages as number)) break;
    }
    const byCursor: Entry[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 1000; i++) {
      const res = await logs(`?limit=${limit}${filter}${cursor ? `&cursor=${cursor}` : ''}`, key);
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
    ({ stores, app } = await openApp(clock));
    const owner = jwtFor(clock, A);
    P1 = await createProject(app, owner, 'Marketing');
    P2 = await createProject(app, owner, 'Transactional');
    const common = { now: NOW, spanDays: 104, templates: ['t1', 't2'] };
    // A third of A's emails in each project, a third in none.
    emailsA = generateEmails({ ...common, tenantId: A, count: 260, seed: 21 }).map((e, i) => ({
      ...e,
      projectId: [P1, P2, null][i % 3] ?? null,
    }));
    // B names A's project ids in its events: none of it may show up for A.
    const emailsB = generateEmails({ ...common, tenantId: B, count: 50, seed: 22 }).map((e) => ({
      ...e,
      projectId: P1,
    }));
    // Three days back, hours 0, 1, 2, 13, 23 and the next day's 0 and 1: at each boundary, 1 ms
    // before and 1 ms after, two entries per instant.
    const base = Date.parse(`${NOW.slice(0, 10)}T00:00:00.000Z`) - 3 * DAY_MS;
    const instants = [0, 1, 2, 13, 23, 24, 25].flatMap((h) =>
      [-1, 0, 1].map((ms) => base + h * 3_600_000 + ms),
    );
    emailsC = generateEmails({ ...common, tenantId: C, count: instants.length * 2, seed: 24 }).map(
      (e, i) => ({
        ...e,
        createdAt: new Date(instants[i % instants.length]!),
      }),
    );
    // Shuffled events in batches of 7: most entries are created, moved and re-counted across batches.
    await projectInSmallBatches(eventsFor([...emailsA, ...emailsB, ...emailsC], 23), 7);
    keyA = (await createKey(app, owner, A, { scopes: ['email:read'] })).key;
    const bound = await app.inject({
      method: 'POST',
      url: `/tenants/${A}/api-keys`,
      headers: bearer(owner),
      payload: { name: 'P1 only', scopes: ['email:read'], projectId: P1 },
    });
    expect(bound.statusCode, bound.body).toBe(201);
    boundKey = bound.json().key;
  });

  afterAll(() => closeAll(app, stores));

  const visible = () => expectedLog(emailsA, NOW, DEFAULT_RETENTION_DAYS);

  /**
   * Every page of `expected` at `limit`, read the counters' way from the first page on (no short
   * walk, no cursor): each is its slice of `expected`, with its length as the total.
   */
  async function expectCounterWalk(
    tenantId: string,
    cutoff: Date,
    filter: Parameters<typeof logsPage>[1]['filter'],
    expected: Entry[],
    limit: number,
  ) {
    for (let page = 1; (page - 1) * limit <= expected.length; page++) {
      const result = await logsPage(stores.pool, {
        tenantId,
        cutoff,
        limit,
        filter,
        page,
        cursor: null,
        shortWalk: 0n,
      });
      expect(result.entries, `${JSON.stringify(filter)} limit ${limit} page ${page}`).toEqual(
        expected.slice((page - 1) * limit, page * limit),
      );
      expect(result.total).toBe(expected.length);
    }
  }
  const byId = () => new Map(emailsA.map((e) => [e.id, e]));
  const projectOf = (e: Entry) => byId().get(e.id)?.projectId ?? null;

  describe('GET /emails/logs filters and cursor (SPEC §19)', () => {
    // Filters naming a project are functions: the project ids exist once beforeAll ran.
    const cases: [string, string | (() => string), (e: Entry) => boolean][] = [
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
      ['templateId', '&templateId=t2', (e) => byId().get(e.id)?.templateId === 't2'],
      [
        'templateId + status + tag',
        '&templateId=t1&status=DELIVERED&tag=receipt',
        (e) =>
          byId().get(e.id)?.templateId === 't1' && e.status === 'DELIVERED' && e.tags.includes('receipt'),
      ],
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
      ['projectId', () => `&projectId=${P1}`, (e) => projectOf(e) === P1],
      [
        'projectId + status',
        () => `&projectId=${P2}&status=DELIVERED`,
        (e) => projectOf(e) === P2 && e.status === 'DELIVERED',
      ],
      [
        'projectId + tag + q',
        () => `&projectId=${P1}&tag=receipt&q=e0`,
        (e) => projectOf(e) === P1 && e.tags.includes('receipt') && e.toEmail.startsWith('e0'),
      ],
    ];

    it.each(cases)(
      '%s: pages and cursor give exactly the matching entries, total exact',
      async (_, query, keep) => {
        const filter = typeof query === 'string' ? query : query();
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

    it('from/to at any year ISO 8601 allows (0000 included, which Postgres refuses): the same entries', async () => {
      const all = visible().map((e) => e.id);
      const ids = async (query: string) => {
        const res = await logs(`?limit=100${query}`);
        expect(res.statusCode, res.body).toBe(200);
        return { ids: res.json().data.map((e: Entry) => e.id), total: res.json().meta.total };
      };
      for (const bound of ['0000-01-01T00:00:00Z', '1969-12-31T23:59:59.999Z', '0001-01-01T00:00:00+14:00']) {
        expect(await ids(`&from=${encodeURIComponent(bound)}`)).toEqual({
          ids: all.slice(0, 100),
          total: all.length,
        });
        expect(await ids(`&to=${encodeURIComponent(bound)}`)).toEqual({ ids: [], total: 0 });
      }
      for (const bound of ['9999-12-31T23:59:59Z', '2149-06-06T00:00:00Z']) {
        expect(await ids(`&to=${encodeURIComponent(bound)}`)).toEqual({
          ids: all.slice(0, 100),
          total: all.length,
        });
        expect(await ids(`&from=${encodeURIComponent(bound)}`)).toEqual({ ids: [], total: 0 });
      }
    });

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

    it('every deep page of a project by number equals the same slice (counter-guided offsets)', async () => {
      const mine = visible().filter((e) => projectOf(e) === P1);
      for (const page of [1, 2, 5, 6, 11, 12, 13]) {
        const res = await logs(`?limit=7&page=${page}&projectId=${P1}`);
        expect(res.json().data).toEqual(mine.slice((page - 1) * 7, page * 7));
        expect(res.json().meta.total).toBe(mine.length);
      }
      const sent = mine.filter((e) => e.status === 'DELIVERED');
      for (const page of [1, 2, 3, 4]) {
        const res = await logs(`?limit=3&page=${page}&projectId=${P1}&status=delivered`);
        expect(res.json().data).toEqual(sent.slice((page - 1) * 3, page * 3));
        expect(res.json().meta.total).toBe(sent.length);
      }
    });

    it('the counter-guided walk from the first page on equals the same slices (every equality filter)', async () => {
      // The route walks offsets below 200 entry by entry; here every offset takes the counters' way.
      const cutoff = retentionCutoff(clock.now(), DEFAULT_RETENTION_DAYS);
      const all = visible();
      const filters: [Parameters<typeof logsPage>[1]['filter'], Entry[]][] = [
        [{}, all],
        [{ status: 'SENT' }, all.filter((e) => e.status === 'SENT')],
        [{ projectId: P1 }, all.filter((e) => projectOf(e) === P1)],
        [
          { projectId: P2, status: 'DELIVERED' },
          all.filter((e) => projectOf(e) === P2 && e.status === 'DELIVERED'),
        ],
      ];
      for (const [filter, expected] of filters) {
        expect(expected.length).toBeGreaterThan(10);
        await expectCounterWalk(A, cutoff, filter, expected, 4);
      }
    });

    it('the counter-guided walk is exact across hour and day boundaries (entries on, before and after them)', async () => {
      const cutoff = retentionCutoff(clock.now(), DEFAULT_RETENTION_DAYS);
      const all = expectedLog(emailsC, NOW, DEFAULT_RETENTION_DAYS);
      expect(all).toHaveLength(emailsC.length);
      const statuses = [...new Set(all.map((e) => e.status))];
      const cases: [Parameters<typeof logsPage>[1]['filter'], Entry[]][] = [
        [{}, all],
        ...statuses.map((status): [{ status: typeof status }, Entry[]] => [
          { status },
          all.filter((e) => e.status === status),
        ]),
      ];
      for (const [filter, expected] of cases) {
        for (const limit of [1, 2, 5]) await expectCounterWalk(C, cutoff, filter, expected, limit);
      }
      // The hour counters agree with the rows they count.
      const { rows } = await stores.pool.query<{ hour: Date; n: string; actual: string }>(
        `SELECT h.hour, sum(h.n)::text AS n,
              (SELECT count(*) FROM email_logs e WHERE e.tenant_id = $1 AND e.created_at >= h.hour
                  AND e.created_at < h.hour + interval '1 hour')::text AS actual
         FROM email_log_hour_counts h WHERE h.tenant_id = $1 AND h.project_id = '' GROUP BY h.hour`,
        [C],
      );
      expect(rows.length).toBeGreaterThan(7);
      for (const r of rows) expect(r.n, r.hour.toISOString()).toBe(r.actual);
    });

    it('a project-bound key: its project only, exact totals with every filter, pages and cursor', async () => {
      for (const [filter, keep] of [
        ['', (e: Entry) => projectOf(e) === P1],
        [`&projectId=${P1}`, (e: Entry) => projectOf(e) === P1],
        ['&status=DELIVERED', (e: Entry) => projectOf(e) === P1 && e.status === 'DELIVERED'],
        ['&tag=receipt', (e: Entry) => projectOf(e) === P1 && e.tags.includes('receipt')],
      ] as const) {
        const expected = visible().filter(keep);
        expect(expected.length).toBeGreaterThan(0);
        const { byPage, byCursor, total } = await walk(filter, 9, boundKey);
        expect(total).toBe(expected.length);
        expect(byPage).toEqual(expected);
        expect(byCursor).toEqual(expected);
      }
      // Another project's id finds nothing (not an error), with a cursor too.
      const other = await logs(`?projectId=${P2}`, boundKey);
      expect(other.json()).toEqual({
        data: [],
        meta: { page: 1, limit: 20, total: 0, totalPages: 0, nextCursor: null },
      });
      const cursor = (await logs('?limit=5')).json().meta.nextCursor;
      const viaCursor = await logs(`?limit=5&projectId=${P2}&cursor=${cursor}`, boundKey);
      expect(viaCursor.json()).toMatchObject({ data: [], meta: { total: 0, nextCursor: null } });
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
    const drift = () => logCounterDrift(stores.pool);
    const allCounters = async () => [
      ...(
        await stores.pool.query('SELECT * FROM email_log_counts ORDER BY tenant_id, project_id, day, status')
      ).rows,
      ...(
        await stores.pool.query(
          'SELECT * FROM email_log_hour_counts ORDER BY tenant_id, project_id, hour, status',
        )
      ).rows,
    ];

    it('equal count(*) per tenant, project, day and status after shuffled small batches', async () => {
      expect(await drift()).toEqual([]);
      const sum = async (projectId: string) =>
        Number(
          (
            await stores.pool.query<{ n: string }>(
              'SELECT sum(n)::text AS n FROM email_log_counts WHERE tenant_id = $1 AND project_id = $2',
              [A, projectId],
            )
          ).rows[0]?.n,
        );
      expect(await sum('')).toBe(emailsA.length);
      expect(await sum(P1)).toBe(emailsA.filter((e) => e.projectId === P1).length);
      expect(await sum(P2)).toBe(emailsA.filter((e) => e.projectId === P2).length);
    });

    it('a replay of every event changes nothing', async () => {
      const before = await allCounters();
      const replay = eventsFor(emailsA.slice(0, 40), 24);
      // Fresh event ids: a second, different event set for the same emails moves nothing the fold
      // already has (same statuses, same createdAt); the counters must not move either.
      await projectInSmallBatches(replay, 11);
      expect(await drift()).toEqual([]);
      expect(await allCounters()).toEqual(before);
    });

    it('an earlier email.queued naming another project moves the entry between project counters', async () => {
      // Tenant B (A's expectations stay as generated): e1 first known in P1, then an earlier
      // email.queued defines it in P2, a day before.
      const [late, early] = eventsOf(B, 'moved', [
        {
          type: 'email.queued',
          occurredAt: '2026-06-15T11:00:00Z',
          data: { toEmail: 'm@x.test', subject: 's', projectId: P1 },
        },
        {
          type: 'email.queued',
          occurredAt: '2026-06-14T10:00:00Z',
          data: { toEmail: 'm@x.test', subject: 's', projectId: P2 },
        },
      ]);
      const count = async (projectId: string, day: string) =>
        (
          await stores.pool.query<{ n: string }>(
            `SELECT coalesce(sum(n), 0)::text AS n FROM email_log_counts
            WHERE tenant_id = $1 AND project_id = $2 AND day = $3`,
            [B, projectId, day],
          )
        ).rows[0]?.n;
      const before = [await count(P1, '2026-06-15'), await count(P2, '2026-06-14')];
      await projectInSmallBatches([late!], 1);
      expect(await drift()).toEqual([]);
      expect(await count(P1, '2026-06-15')).toBe(String(Number(before[0]) + 1));
      await projectInSmallBatches([early!], 1);
      expect(await drift()).toEqual([]);
      expect([await count(P1, '2026-06-15'), await count(P2, '2026-06-14')]).toEqual([
        before[0],
        String(Number(before[1]) + 1),
      ]);
      const snapshot = await allCounters();
      await projectInSmallBatches([late!, early!], 2); // replayed: nothing moves
      expect(await allCounters()).toEqual(snapshot);
    });
  });
});
