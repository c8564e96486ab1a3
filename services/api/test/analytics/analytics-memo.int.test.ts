// Analytics memoised on the projection watermark (issue 10): a repeated dashboard load costs no
// engine query, and stays exact — a batch projected in between changes the answer. The engine is
// the real chDB; the test only counts the queries that reach it.
import type { ClickHouseClient } from '@clickhouse/client';
import { applyBatchToPostgres, shipBatch } from '@tern/projector';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadMemo } from '../../src/read-memo.js';
import {
  cohort,
  eventsFor,
  expectedDaily,
  expectedTotals,
  type GeneratedEmail,
  generateEmails,
  windowOf,
} from '../dataset.js';
import {
  bearer,
  buildApp,
  closeAll,
  createClock,
  DEFAULT_RETENTION_DAYS,
  eventsOf,
  jwtFor,
  NOW,
  openStores,
  project,
  type Stores,
  suffix,
} from '../support.js';

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
      data: { toEmail: 'x@example.com', subject: 's', templateId: 't1', ...(projectId ? { projectId } : {}) },
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
