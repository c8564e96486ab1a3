import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
} from '../dataset.js';
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  DEFAULT_RETENTION_DAYS,
  insertTemplate,
  jwtFor,
  NOW,
  openApp,
  project,
  rawJwt,
  type Stores,
  testTenants,
} from '../support.js';

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
      const nobody = (await get('/analytics/summary?days=90', bearer(jwtFor(clock, `nobody-${run}`)))).json();
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
      const top = (await get('/analytics/top-templates?days=7')).json().top as { id: string; sent: number }[];
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
