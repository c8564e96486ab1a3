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
import { createReadMemo } from '../../src/read-memo.js';
import {
  cohort,
  eventsFor,
  expectedDaily,
  expectedRates,
  expectedTop,
  expectedTotals,
  type GeneratedEmail,
  generateEmails,
  windowOf,
} from '../datasets.js';
import {
  bearer,
  buildApp,
  closeAll,
  createClock,
  createKey,
  DEFAULT_RETENTION_DAYS,
  eventsOf,
  insertTemplate,
  jwtFor,
  NOW,
  openApp,
  openStores,
  project,
  rawJwt,
  type Stores,
  suffix,
  testTenants,
} from '../support.js';

describe('analytics (SPEC §20)', () => {
  const { clock, run, A, B } = testTenants('tenant');
  /** Has a retention override of 10 days, shorter than most periods. */
  const C = `tenant-c-${run}`;
  const C_RETENTION = 10;
  const TEMPLATES = Array.from({ length: 14 }, (_, i) => `tpl-${String(i).padStart(2, '0')}`);

  let stores: Stores;
  let app: FastifyInstance;
  let emailsA: GeneratedEmail[];
  let emailsC: GeneratedEmail[];
  const namesA = new Map<string, { name: string; subject: string }>();
  let tokenA: string;
  let keyA: string;

  async function get(url: string, headers: Record<string, string> = bearer(tokenA)) {
    return app.inject({ method: 'GET', url, headers });
  }

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    tokenA = jwtFor(clock, A);
    const common = { now: NOW, spanDays: 104, templates: TEMPLATES };
    emailsA = generateEmails({ ...common, tenantId: A, count: 420, seed: 1 });
    // B: the same ids and templates, other figures; none of it may show up for A.
    const emailsB = generateEmails({ ...common, tenantId: B, count: 200, seed: 2 });
    emailsC = generateEmails({ ...common, tenantId: C, count: 150, seed: 3 });
    // Not queued: events of an email whose email.queued never came are invisible everywhere.
    const orphan = eventsFor([{ ...emailsA[0]!, id: 'never-queued' }], 9).filter(
      (e) => e.type !== 'email.queued',
    );
    await project(stores, [...eventsFor([...emailsA, ...emailsB, ...emailsC], 4), ...orphan]);

    for (const [i, id] of ['tpl-00', 'tpl-03', 'tpl-07', 'tpl-tie-y'].entries()) {
      namesA.set(id, { name: `Template ${i}`, subject: `Subject ${i}` });
      await insertTemplate(stores.pool, A, id, `Template ${i}`, `Subject ${i}`);
    }
    // Same id, another tenant: must not name A's template.
    await insertTemplate(stores.pool, B, 'tpl-01', 'B only', 'B subject');

    const put = await app.inject({
      method: 'PUT',
      url: `/tenants/${C}/settings`,
      headers: bearer(jwtFor(clock, C, 'admin')),
      payload: { retentionDays: C_RETENTION },
    });
    expect(put.statusCode, put.body).toBe(200);
    keyA = (await createKey(app, tokenA, A, { scopes: ['email:read', 'email:send'] })).key;
  });

  afterAll(() => closeAll(app, stores));

  describe('GET /analytics/summary', () => {
    describe('200', () => {
      it.each([1, 7, 30, 90])('days=%i: totals and rates match an independent computation', async (days) => {
        const res = await get(`/analytics/summary?days=${days}`);
        expect(res.statusCode, res.body).toBe(200);
        const inCohort = cohort(emailsA, windowOf(NOW, days, DEFAULT_RETENTION_DAYS));
        const totals = expectedTotals(inCohort);
        expect(totals.total).toBeGreaterThan(0);
        expect(res.json()).toEqual({
          period: {
            days,
            since: new Date(Date.parse('2026-06-15T00:00:00.000Z') - (days - 1) * 86_400_000).toISOString(),
            until: NOW,
          },
          totals,
          rates: expectedRates(totals),
        });
      });

      it('defaults to 30 days', async () => {
        const res = await get('/analytics/summary');
        expect(res.statusCode).toBe(200);
        expect(res.json().period).toEqual({ days: 30, since: '2026-05-17T00:00:00.000Z', until: NOW });
        expect(res.json().totals).toEqual(
          expectedTotals(cohort(emailsA, windowOf(NOW, 30, DEFAULT_RETENTION_DAYS))),
        );
      });

      it('counts the first instant of the period and not the instant before', async () => {
        const ids = cohort(emailsA, windowOf(NOW, 7, DEFAULT_RETENTION_DAYS)).map((e) => e.id);
        expect(ids).toContain('edge-6-start');
        expect(ids).not.toContain('edge-6-prev');
        expect(ids).toContain('later-today');
        expect(ids).not.toContain('tomorrow');
        // The edge emails are a delivered+opened one and a bounced one: each moves a visible figure.
        const withEdge = (await get('/analytics/summary?days=7')).json().totals;
        const withoutStart = expectedTotals(
          cohort(emailsA, windowOf(NOW, 7, DEFAULT_RETENTION_DAYS)).filter((e) => e.id !== 'edge-6-start'),
        );
        expect(withEdge.opened).toBe(withoutStart.opened + 1);
      });

      it('applies the tenant retention override: entries before the cut-off day are not counted', async () => {
        const res = await get('/analytics/summary?days=30', bearer(jwtFor(clock, C, 'member')));
        expect(res.statusCode).toBe(200);
        const w = windowOf(NOW, 30, C_RETENTION);
        expect(w.fromDay).toBe('2026-06-05');
        const totals = expectedTotals(cohort(emailsC, w));
        expect(res.json().totals).toEqual(totals);
        // And the period itself still says 30 days: retention hides entries, it does not shorten the period.
        expect(res.json().period.days).toBe(30);
        expect(totals.total).toBeLessThan(expectedTotals(cohort(emailsC, windowOf(NOW, 30, 90))).total);
      });

      it('applies the server default retention when it is shorter than the period', async () => {
        const shortRetention = await buildApp(stores, clock, { policy: { retentionDays: 45 } });
        try {
          const w = windowOf(NOW, 90, 45);
          for (const [route, expected] of [
            ['summary', expectedTotals(cohort(emailsA, w))],
            ['daily', expectedDaily(cohort(emailsA, w), NOW, 90, w)],
            ['top-templates', expectedTop(cohort(emailsA, w), namesA)],
          ] as const) {
            const res = await shortRetention.inject({
              url: `/analytics/${route}?days=90`,
              headers: bearer(tokenA),
            });
            const body = res.json();
            expect(body.totals ?? body.daily ?? body.top).toEqual(expected);
          }
        } finally {
          await shortRetention.close();
        }
      });

      it('shows only the caller’s tenant', async () => {
        const a = (await get('/analytics/summary?days=90')).json();
        const b = (await get('/analytics/summary?days=90', bearer(jwtFor(clock, B)))).json();
        expect(a.totals.total).toBe(cohort(emailsA, windowOf(NOW, 90, 90)).length);
        expect(b.totals.total).not.toBe(a.totals.total);
        const nobody = (
          await get('/analytics/summary?days=90', bearer(jwtFor(clock, `nobody-${run}`)))
        ).json();
        // Every figure 0 (the totals of no email), every rate 0.
        expect(nobody.totals).toEqual(expectedTotals([]));
        expect(nobody.rates).toEqual({ openRate: 0, clickRate: 0, bounceRate: 0, complaintRate: 0 });
      });

      it('carries X-Tern-As-Of: the last projected batch; the body has no extra field', async () => {
        const { rows } = await stores.pool.query<{ at: Date }>(
          "SELECT last_batch_at AS at FROM projection_status WHERE name = 'projector'",
        );
        const res = await get('/analytics/summary');
        expect(res.headers['x-tern-as-of']).toBe(rows[0]!.at.toISOString());
        expect(Object.keys(res.json()).sort()).toEqual(['period', 'rates', 'totals']);
      });
    });

    describe('400', () => {
      it.each(['0', '91', '-1', '1.5', 'abc', '', '1e1', '30&days=31'])('days=%s', async (value) => {
        const res = await get(`/analytics/summary?days=${value}`);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
        expect(res.json().message).toContain('days');
      });
    });

    describe('401', () => {
      it('without a credential', async () => {
        const res = await app.inject({ method: 'GET', url: '/analytics/summary' });
        expect(res.statusCode).toBe(401);
        expect(res.json()).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
      });

      it('with an expired, forged or tenant-less JWT', async () => {
        const exp = Math.floor(clock.now().getTime() / 1000) + 600;
        for (const token of [
          jwtFor(clock, A, 'owner', -1),
          rawJwt({ alg: 'HS256', typ: 'JWT' }, { tenantId: A, role: 'owner', exp }, 'wrong-secret'),
          rawJwt({ alg: 'none', typ: 'JWT' }, { tenantId: A, role: 'owner', exp }),
          rawJwt({ alg: 'HS256', typ: 'JWT' }, { role: 'owner', exp }, 'api-test-secret-that-is-long-enough'),
        ]) {
          const res = await get('/analytics/summary', bearer(token));
          expect(res.statusCode, token).toBe(401);
        }
      });
    });

    describe('403', () => {
      it('with an API key, whatever its scopes: a dashboard session is required', async () => {
        for (const headers of [bearer(keyA), { 'x-api-key': keyA }]) {
          const res = await get('/analytics/summary', headers);
          expect(res.statusCode).toBe(403);
          expect(res.json().message).toMatch(/dashboard session/);
        }
      });
    });
  });

  describe('GET /analytics/daily', () => {
    describe('200', () => {
      it.each([1, 7, 30, 90])(
        'days=%i: exactly days zero-filled buckets, oldest first, equal to an independent count',
        async (days) => {
          const res = await get(`/analytics/daily?days=${days}`);
          expect(res.statusCode, res.body).toBe(200);
          const body = res.json();
          const w = windowOf(NOW, days, DEFAULT_RETENTION_DAYS);
          expect(body).toEqual({ days, daily: expectedDaily(cohort(emailsA, w), NOW, days, w) });
          expect(body.daily).toHaveLength(days);
          expect(body.daily.at(-1).date).toBe('2026-06-15');
        },
      );

      it('Σ daily = summary totals', async () => {
        for (const days of [7, 30, 90]) {
          const daily = (await get(`/analytics/daily?days=${days}`)).json().daily as Record<string, number>[];
          const totals = (await get(`/analytics/summary?days=${days}`)).json().totals;
          for (const k of ['sent', 'opened', 'clicked', 'bounced']) {
            expect(daily.reduce((n, d) => n + (d[k] ?? 0), 0)).toBe(totals[k]);
          }
        }
      });

      it('zero-fills the days before the retention cut-off', async () => {
        const body = (await get('/analytics/daily?days=30', bearer(jwtFor(clock, C, 'member')))).json();
        const w = windowOf(NOW, 30, C_RETENTION);
        expect(body.daily).toEqual(expectedDaily(cohort(emailsC, w), NOW, 30, w));
        const early = body.daily.filter((d: { date: string }) => d.date < '2026-06-05');
        expect(early).toHaveLength(19);
        expect(
          early.every((d: Record<string, unknown>) => d.sent === 0 && d.opened === 0 && d.bounced === 0),
        ).toBe(true);
      });
    });

    describe('400', () => {
      it.each(['0', '91', 'x'])('days=%s', async (value) => {
        const res = await get(`/analytics/daily?days=${value}`);
        expect(res.statusCode).toBe(400);
        expect(res.json().message).toContain('days');
      });
    });

    describe('401', () => {
      it('without a credential', async () => {
        expect((await app.inject({ method: 'GET', url: '/analytics/daily' })).statusCode).toBe(401);
      });
    });

    describe('403', () => {
      it('with an API key', async () => {
        const res = await get('/analytics/daily', { 'x-api-key': keyA });
        expect(res.statusCode).toBe(403);
        expect(res.json().message).toMatch(/dashboard session/);
      });
    });
  });

  describe('GET /analytics/top-templates', () => {
    describe('200', () => {
      it.each([1, 7, 30, 90])(
        'days=%i: at most 10, by sent desc then id asc, names from the tenant’s templates',
        async (days) => {
          const res = await get(`/analytics/top-templates?days=${days}`);
          expect(res.statusCode, res.body).toBe(200);
          const inCohort = cohort(emailsA, windowOf(NOW, days, DEFAULT_RETENTION_DAYS));
          expect(res.json()).toEqual({ top: expectedTop(inCohort, namesA) });
        },
      );

      it('breaks a tie in sent by id asc, and names an unknown template by its id', async () => {
        const top = (await get('/analytics/top-templates?days=7')).json().top as {
          id: string;
          sent: number;
        }[];
        const y = top.findIndex((t) => t.id === 'tpl-tie-y');
        const z = top.findIndex((t) => t.id === 'tpl-tie-z');
        expect(y).toBeGreaterThanOrEqual(0);
        expect(top[y]!.sent).toBe(top[z]!.sent);
        expect(y).toBe(z - 1);
        expect(top[z]).toMatchObject({ name: 'tpl-tie-z', subject: '' });
        expect(top[y]).toMatchObject({ name: namesA.get('tpl-tie-y')!.name });
        expect(top.length).toBeLessThanOrEqual(10);
      });

      it('never takes names from another tenant', async () => {
        const top = (await get('/analytics/top-templates?days=90')).json().top as {
          id: string;
          name: string;
        }[];
        expect(top.find((t) => t.id === 'tpl-01')?.name ?? 'tpl-01').toBe('tpl-01');
      });
    });

    describe('400', () => {
      it.each(['0', '91', '2.0'])('days=%s', async (value) => {
        const res = await get(`/analytics/top-templates?days=${value}`);
        expect(res.statusCode).toBe(400);
        expect(res.json().message).toContain('days');
      });
    });

    describe('401', () => {
      it('with a revoked-looking garbage credential', async () => {
        const res = await get('/analytics/top-templates', bearer('not-a-credential'));
        expect(res.statusCode).toBe(401);
      });
    });

    describe('403', () => {
      it('with an API key', async () => {
        const res = await get('/analytics/top-templates', bearer(keyA));
        expect(res.statusCode).toBe(403);
        expect(res.json().message).toMatch(/dashboard session/);
      });
    });
  });
});

// Analytics memoised on the projection watermark (issue 10): a repeated dashboard load costs no
// engine query, and stays exact — a batch projected in between changes the answer. The engine is
// the real chDB; the test only counts the queries that reach it.
describe('analytics memoised on the projection watermark', () => {
  const clock = createClock(NOW);
  const A = `memo-a-${suffix()}`;
  let stores: Stores;
  let app: FastifyInstance;
  let engineQueries = 0;
  const P1 = 'prj_memoProjectOne';
  const P2 = 'prj_memoProjectTwo';
  let emails: GeneratedEmail[];
  const DASHBOARD = [
    '/analytics/summary?days=30',
    '/analytics/daily?days=30',
    '/analytics/top-templates?days=30',
  ];

  /** The real client, with its SELECTs counted. */
  function counting(ch: ClickHouseClient): ClickHouseClient {
    return new Proxy(ch, {
      get(target, prop, receiver) {
        if (prop === 'query') {
          return (...args: Parameters<ClickHouseClient['query']>) => {
            engineQueries++;
            return target.query(...args);
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  const load = async () =>
    Promise.all(
      DASHBOARD.map(async (url) => {
        const res = await app.inject({ method: 'GET', url, headers: bearer(jwtFor(clock, A)) });
        expect(res.statusCode, res.body).toBe(200);
        return res.json();
      }),
    );

  const queued = (emailId: string, projectId?: string) =>
    eventsOf(A, emailId, [
      {
        type: 'email.queued',
        occurredAt: '2026-06-15T09:00:00.000Z',
        data: {
          toEmail: 'x@example.com',
          subject: 's',
          templateId: 't1',
          ...(projectId ? { projectId } : {}),
        },
      },
      {
        type: 'email.sent',
        occurredAt: '2026-06-15T09:00:01.000Z',
        data: { provider: 'ses', messageId: `m-${emailId}` },
      },
    ]);

  beforeAll(async () => {
    stores = await openStores();
    app = await buildApp({ pool: stores.pool, ch: counting(stores.ch) }, clock);
    // A third of the emails in each project, a third in none.
    emails = generateEmails({
      tenantId: A,
      now: NOW,
      count: 80,
      seed: 5,
      spanDays: 40,
      templates: ['t1', 't2'],
    }).map((e, i) => ({ ...e, projectId: [P1, P2, null][i % 3] ?? null }));
    await project(stores, eventsFor(emails, 6));
  });

  afterAll(() => closeAll(app, stores));

  describe('analytics memoised on the projection watermark', () => {
    it('a repeated dashboard load asks the engine nothing and answers the same', async () => {
      const first = await load();
      const afterFirst = engineQueries;
      expect(afterFirst).toBe(3);
      expect(await load()).toEqual(first);
      expect(await load()).toEqual(first);
      expect(engineQueries).toBe(afterFirst);
    });

    it('an event projected between two loads changes the answer', async () => {
      const before = await load();
      const queries = engineQueries;
      await project(stores, queued(`new-${suffix()}`));
      const after = await load();
      expect(engineQueries).toBe(queries + 3);
      expect(after[0].totals.total).toBe(before[0].totals.total + 1);
      expect(after[0].totals.sent).toBe(before[0].totals.sent + 1);
      expect(after[1].daily.at(-1).sent).toBe(before[1].daily.at(-1).sent + 1);
    });

    it('a batch committed in Postgres but not yet shipped to ClickHouse is never memoised', async () => {
      const before = await load();
      const result = await applyBatchToPostgres(
        stores.pool,
        queued(`late-${suffix()}`),
        [],
        () => `b-${suffix()}`,
      );
      // Postgres has moved on, ClickHouse has not: the answer is the old one, and not kept.
      const during = await load();
      expect(during[0].totals).toEqual(before[0].totals);
      await shipBatch(stores.ch, result.outbox!.batchId, result.outbox!.rows);
      await stores.pool.query('DELETE FROM analytics_outbox WHERE batch_id = $1', [result.outbox!.batchId]);
      const after = await load();
      expect(after[0].totals.total).toBe(before[0].totals.total + 1);
    });

    it('each project is its own key, exact against an independent computation and after a new event', async () => {
      const get = async (url: string) => {
        const res = await app.inject({ method: 'GET', url, headers: bearer(jwtFor(clock, A)) });
        expect(res.statusCode, res.body).toBe(200);
        return res.json();
      };
      const w = windowOf(NOW, 30, DEFAULT_RETENTION_DAYS);
      const tenant = (await get('/analytics/summary?days=30')).totals;
      const queries = engineQueries;
      // The events projected by the tests above (no project) are in the tenant's figures only.
      for (const p of [P1, P2]) {
        const mine = emails.filter((e) => e.projectId === p);
        const summary = await get(`/analytics/summary?days=30&projectId=${p}`);
        expect(summary.totals).toEqual(expectedTotals(cohort(mine, w)));
        expect((await get(`/analytics/daily?days=30&projectId=${p}`)).daily).toEqual(
          expectedDaily(mine, NOW, 30, w),
        );
        expect(summary.totals.total).toBeLessThan(tenant.total);
      }
      expect(engineQueries).toBe(queries + 4);
      // Again: every answer from the memo, each project's its own.
      const p1 = (await get(`/analytics/summary?days=30&projectId=${P1}`)).totals;
      const p2 = (await get(`/analytics/summary?days=30&projectId=${P2}`)).totals;
      expect((await get('/analytics/summary?days=30')).totals).toEqual(tenant);
      expect(engineQueries).toBe(queries + 4);
      expect(p1).not.toEqual(p2);
      // One email of P1 projected: P1 and the tenant move by one, P2 does not (asked again all the same).
      await project(stores, queued(`p1-${suffix()}`, P1));
      expect((await get(`/analytics/summary?days=30&projectId=${P1}`)).totals.total).toBe(p1.total + 1);
      expect((await get(`/analytics/summary?days=30&projectId=${P2}`)).totals).toEqual(p2);
      expect((await get('/analytics/summary?days=30')).totals.total).toBe(tenant.total + 1);
      expect(engineQueries).toBe(queries + 7);
    });

    it('other tenants, periods and retentions are other keys', async () => {
      const queries = engineQueries;
      const res = await app.inject({
        method: 'GET',
        url: '/analytics/summary?days=7',
        headers: bearer(jwtFor(clock, A)),
      });
      expect(res.statusCode).toBe(200);
      const other = await app.inject({
        method: 'GET',
        url: '/analytics/summary?days=30',
        headers: bearer(jwtFor(clock, `${A}-other`)),
      });
      expect(other.json().totals.total).toBe(0);
      expect(engineQueries).toBe(queries + 2);
    });
  });

  describe('createReadMemo', () => {
    it('shares one computation between concurrent calls, forgets failures, stays bounded', async () => {
      const memo = createReadMemo<number>({ maxEntries: 2 });
      let calls = 0;
      const compute = async () => ++calls;
      const [a, b] = await Promise.all([memo.get('k', 'w1', compute), memo.get('k', 'w1', compute)]);
      expect([a, b, calls]).toEqual([1, 1, 1]);
      expect(await memo.get('k', 'w2', compute)).toBe(2);
      expect(await memo.get('k', null, compute)).toBe(3);
      expect(await memo.get('k', null, compute)).toBe(4);
      await expect(memo.get('bad', 'w1', () => Promise.reject(new Error('engine down')))).rejects.toThrow();
      expect(await memo.get('bad', 'w1', compute)).toBe(5);
      expect(memo.size).toBeLessThanOrEqual(2);
    });
  });
});

// Repeated reads memoised on the read-model feed (issue 10): with a listening feed, a repeated logs
// page or dashboard load costs no Postgres query and no engine query, and every change committed
// for the tenant — a projected batch, an erasure, a retention change, a shipped analytics batch —
// shows in the next read (at once on the instance that made it; on the others when the notice
// arrives). Without a listening feed every read queries the stores, as before. Real Postgres server,
// real PGlite, real chDB; the test only counts the queries that reach them.
describe('repeated reads memoised on the read-model feed', () => {
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
});
