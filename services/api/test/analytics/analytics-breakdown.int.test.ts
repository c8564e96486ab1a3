import { DIM_COUNTER_NAMES, type DimDelta, zeroDimCounters } from '@tern/domain';
import { createMailboxResolver } from '@tern/projector';
import {
  breakdownParams,
  breakdownSql,
  createBreakdownQueries,
  createDimsVersion,
  DIMENSIONS,
  type Dimension,
  deliverabilitySql,
  serveDimsTable,
  shipDimRows,
  wholeHourZone,
} from '@tern/read-models';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import {
  CAMPAIGNS,
  type Counts,
  DIAGNOSTICS,
  type EmailFacts,
  expectedBreakdown,
  factsOf,
  generateHistory,
  PROJECTS,
  RECIPIENT_DOMAINS,
  SENDING,
  TAG_POOL,
  TEMPLATES,
} from '../datasets.js';
import { bearer, closeAll, createKey, jwtFor, NOW, project, testApp } from '../support.js';

/**
 * SPEC §26 on chDB: emails projected through the projector's own sinks (recipient providers
 * resolved through a real DNS server), then asked through the routes. Every dimension is proven
 * from the events, and the answers equal an independent count over the raw events for a random
 * sample of filters (fast-check).
 */

const file = testApp('breakdown');
const { clock, A, B } = file;
/** A's time zone: +05:30, so its days are not UTC days and not whole hours of UTC. */
const ZONE = 'Asia/Kolkata';
let dns: TestDnsServer;
let facts: EmailFacts[];
let eventsOfA: ReturnType<typeof generateHistory>;
let token: string;

const get = (url: string, headers = bearer(token)) => file.app.inject({ method: 'GET', url, headers });
type Row = Counts & { key: string; rates: Record<string, number>; series?: (Counts & { start: string })[] };
const countsOf = (r: Counts) => Object.fromEntries(DIM_COUNTER_NAMES.map((c) => [c, r[c]]));

beforeAll(async () => {
  dns = await startTestDnsServer();
  for (const d of RECIPIENT_DOMAINS) if (d.mx) dns.mx(d.domain, d.mx);
  token = jwtFor(clock, A);
  const res = await file.app.inject({
    method: 'PUT',
    url: `/tenants/${A}/settings`,
    headers: bearer(token),
    payload: { timeZone: ZONE },
  });
  expect(res.statusCode).toBe(200);
  const eventsA = generateHistory(A, NOW, 400, 7);
  const eventsB = generateHistory(B, NOW, 100, 8);
  const all = [...eventsA, ...eventsB];
  const resolver = createMailboxResolver({ servers: [dns.server] });
  // Three batches: an email's events land in different batches, in any order.
  const third = Math.ceil(all.length / 3);
  for (let i = 0; i < all.length; i += third) {
    const batch = all.slice(i, i + third);
    await project(file.stores, batch, await resolver.prepare(batch));
  }
  facts = factsOf(eventsA, ZONE);
  eventsOfA = eventsA;
}, 120_000);

afterAll(() => closeAll(dns));

const localToday = () => new Intl.DateTimeFormat('en-CA', { timeZone: ZONE }).format(clock.now());
const daysAgo = (n: number) =>
  new Date(Date.parse(`${localToday()}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);

describe('each dimension, from events to answer', () => {
  const expectDimension = async (by: string, mustHave: string[]) => {
    const res = await get(`/analytics/breakdown?by=${by}&days=30`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { data: Row[]; period: { timeZone: string } };
    expect(body.period.timeZone).toBe(ZONE);
    const expected = expectedBreakdown(facts, by, {}, daysAgo(29), localToday());
    expect(new Map(body.data.map((r) => [r.key, countsOf(r)]))).toEqual(
      new Map([...expected].map(([k, c]) => [k, countsOf(c)])),
    );
    for (const key of mustHave) expect(body.data.map((r) => r.key)).toContain(key);
  };
  it('mailbox provider: consumer domains by name, custom domains by their MX', () =>
    expectDimension('provider', ['gmail', 'yahoo', 'google_workspace', 'microsoft_365', 'other']));
  it('tag (an email counted once per tag)', () => expectDimension('tag', [...TAG_POOL, '']));
  it('template', () => expectDimension('template', TEMPLATES));
  it('project', () => expectDimension('project', PROJECTS));
  it('campaign', () => expectDimension('campaign', CAMPAIGNS));
  it('sending domain', () => expectDimension('domain', SENDING));
  it('client family of the first human open or click', () =>
    expectDimension('client', ['Outlook', 'Apple Mail', 'Chrome', '']));
  it('device type', () => expectDimension('device', ['desktop', 'mobile', '']));
  it('bounce category from the diagnostic', () =>
    expectDimension('bounce', ['unknown_user', 'mailbox_full', 'spam_block', '']));
  it('knows the diagnostics it was given', () => expect(DIAGNOSTICS.length).toBe(3));
});

describe('breakdown = an independent count over the raw events (property)', () => {
  // The lists the property ranges over are the code's; pinned here to the SPEC's (§26), so a
  // dimension or counter dropped from the code fails this instead of leaving the property smaller.
  it('ranges over the SPEC §26 dimensions and counters', () => {
    expect(DIMENSIONS.join(' ')).toBe('tag template project campaign domain provider client device bounce');
    expect(DIM_COUNTER_NAMES.join(' ')).toBe(
      'total sent delivered opened clicked bounced complained failed delayed',
    );
  });
  const dims = DIMENSIONS;
  const valuesOf: Record<Dimension, string[]> = {
    tag: TAG_POOL,
    template: [...TEMPLATES, ''],
    project: [...PROJECTS, ''],
    campaign: [...CAMPAIGNS, ''],
    domain: SENDING,
    provider: ['gmail', 'yahoo', 'google_workspace', 'microsoft_365', 'other', 'icloud'],
    client: ['Outlook', 'Apple Mail', 'Chrome', ''],
    device: ['desktop', 'mobile', ''],
    bounce: ['unknown_user', 'mailbox_full', 'spam_block', ''],
  };
  const filtersArb = fc
    .subarray([...dims], { maxLength: 3 })
    .chain((chosen) =>
      fc.record(
        Object.fromEntries(chosen.map((d) => [d, fc.constantFrom(...valuesOf[d])])) as Record<
          string,
          fc.Arbitrary<string>
        >,
      ),
    );
  const rangeArb = fc
    .tuple(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10 }))
    .map(([a, b]) => [daysAgo(Math.max(a, b)), daysAgo(Math.min(a, b))] as const);

  it('for any dimension, filters and local day range; the day series adds up to the row', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...dims),
        filtersArb,
        rangeArb,
        fc.boolean(),
        async (by, filters, [from, to], series) => {
          const qs = new URLSearchParams({
            by,
            from,
            to,
            ...filters,
            ...(series ? { interval: 'day' } : {}),
          });
          const res = await get(`/analytics/breakdown?${qs}`);
          expect(res.statusCode, res.body).toBe(200);
          const rows = (res.json() as { data: Row[] }).data;
          const expected = expectedBreakdown(facts, by, filters, from, to);
          expect(new Map(rows.map((r) => [r.key, countsOf(r)]))).toEqual(
            new Map([...expected].map(([k, c]) => [k, countsOf(c)])),
          );
          if (series)
            for (const row of rows) {
              const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000 + 1;
              expect(row.series).toHaveLength(days);
              expect(row.series!.reduce((n, p) => n + p.total, 0)).toBe(row.total);
            }
        },
      ),
      { numRuns: 40 },
    );
  }, 300_000);
});

describe('the hourly projections (ClickHouse migration 0032)', () => {
  const dims = DIMENSIONS;
  /** Whole-hour zones (with and without summer time) read the projections; the others the rows. */
  const ZONES = [
    'UTC',
    'America/New_York',
    'Europe/Paris',
    'Pacific/Kiritimati',
    'Asia/Kolkata',
    'Asia/Kathmandu',
  ];

  it('knows which zones are whole hours off UTC over a range', () => {
    expect(wholeHourZone('UTC', '2026-01-01', '2026-12-31')).toBe(true);
    expect(wholeHourZone('America/New_York', '2026-01-01', '2026-12-31')).toBe(true);
    expect(wholeHourZone('Asia/Kolkata', '2026-06-01', '2026-06-01')).toBe(false);
    expect(wholeHourZone('Asia/Kathmandu', '2026-06-01', '2026-06-01')).toBe(false);
    // Lord Howe is +10:30 in winter and +11 in summer: a range touching its winter is not whole.
    expect(wholeHourZone('Australia/Lord_Howe', '2026-01-10', '2026-01-20')).toBe(true);
    expect(wholeHourZone('Australia/Lord_Howe', '2026-01-10', '2026-06-20')).toBe(false);
    expect(wholeHourZone('Not/AZone', '2026-01-01', '2026-01-02')).toBe(false);
  });

  it('an unfiltered breakdown in a whole-hour zone reads a projection; +05:30 or a filter reads the rows', async () => {
    const run = (
      zone: string,
      by: (typeof dims)[number],
      filters: Record<string, string>,
      series: boolean,
    ) => {
      const p = breakdownParams.parse({
        tenantId: A,
        fromDay: daysAgo(10),
        toDay: daysAgo(0),
        timeZone: zone,
        by,
        filters,
        interval: series ? 'hour' : undefined,
      });
      const { query, params } = breakdownSql(p, series ? 'series' : 'rows');
      return file.stores.ch.query({
        query,
        query_params: { ...params, limit: 100, keys: ['gmail', 'x'] },
        format: 'JSONEachRow',
        // Throws when no projection answers.
        clickhouse_settings: { force_optimize_projection: 1 },
      });
    };
    for (const by of dims) {
      await expect(run('Europe/Paris', by, {}, false), by).resolves.toBeDefined();
      await expect(run('UTC', by, {}, true), by).resolves.toBeDefined();
      await expect(run('Asia/Kolkata', by, {}, false), by).rejects.toThrow(/projection/i);
    }
    await expect(run('UTC', 'provider', { template: TEMPLATES[0]! }, false)).rejects.toThrow(/projection/i);
  });

  it('deliverability reads the whole UTC days of its range from the daily projection, in any zone', async () => {
    for (const zone of ['UTC', 'Europe/Paris', 'Asia/Kolkata']) {
      const p = breakdownParams.parse({
        tenantId: A,
        fromDay: daysAgo(10),
        toDay: daysAgo(0),
        timeZone: zone,
        by: 'provider',
        filters: {},
      });
      const plan = async (projections: boolean) => {
        const { query, params } = deliverabilitySql(
          p,
          wholeHourZone(zone, p.fromDay, p.toDay),
          false,
          projections,
        );
        const rs = await file.stores.ch.query({
          query: `EXPLAIN indexes = 1, projections = 1 ${query}`,
          query_params: params,
          format: 'TabSeparatedRaw',
        });
        return rs.text();
      };
      expect(await plan(true), zone).toContain('by_day_provider_seconds');
      expect(await plan(false), zone).not.toContain('by_day_provider_seconds');
    }
  });

  it('answers equal an independent count in any zone, projection or rows, day by day (property)', async () => {
    const queries = createBreakdownQueries(file.stores.ch);
    const factsIn = new Map(ZONES.map((z) => [z, factsOf(eventsOfA, z)]));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ZONES),
        fc.constantFrom(...dims),
        fc.boolean(),
        fc.tuple(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10 })),
        fc.integer({ min: 1, max: 12 }),
        async (zone, by, filtered, [a, b], limit) => {
          const [from, to] = [daysAgo(Math.max(a, b)), daysAgo(Math.min(a, b))];
          const filters: Record<string, string> = filtered ? { device: 'mobile' } : {};
          const zoneFacts = factsIn.get(zone)!;
          const { rows, series } = await queries.breakdown({
            tenantId: A,
            fromDay: from,
            toDay: to,
            timeZone: zone,
            by,
            filters,
            interval: 'day',
            limit,
          });
          // The first `limit` keys by total, then key.
          const expected = [...expectedBreakdown(zoneFacts, by, filters, from, to)]
            .sort(([ka, a], [kb, b]) => b.total - a.total || (ka < kb ? -1 : ka > kb ? 1 : 0))
            .slice(0, limit);
          expect(rows.map((r) => [r.key, countsOf(r)])).toEqual(expected.map(([k, c]) => [k, countsOf(c)]));
          expect(new Set(series.map((p) => p.key))).toEqual(new Set(rows.map((r) => r.key)));
          const dayOf = new Intl.DateTimeFormat('en-CA', { timeZone: zone });
          for (const point of series) {
            const day = dayOf.format(point.start * 1000);
            const want = expectedBreakdown(zoneFacts, by, filters, day, day).get(point.key);
            expect(countsOf(point), `${zone} ${by} ${point.key} ${day}`).toEqual(
              want ? countsOf(want) : undefined,
            );
          }
          for (const row of rows) {
            const points = series.filter((p) => p.key === row.key);
            expect(points.reduce((n, p) => n + p.total, 0)).toBe(row.total);
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 300_000);

  it('the projections answer as the 15-minute rows do: breakdown, series and deliverability (property)', async () => {
    const fast = createBreakdownQueries(file.stores.ch);
    const rowsOnly = createBreakdownQueries(file.stores.ch, { projections: false });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('UTC', 'America/New_York', 'Europe/Paris', 'Asia/Kolkata'),
        fc.constantFrom(...dims),
        fc.constantFrom(undefined, 'hour', 'day'),
        fc.tuple(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10 })),
        fc.integer({ min: 1, max: 12 }),
        async (zone, by, interval, [a, b], limit) => {
          const range = { fromDay: daysAgo(Math.max(a, b)), toDay: daysAgo(Math.min(a, b)) };
          const params = { tenantId: A, ...range, timeZone: zone, by, filters: {}, interval, limit } as const;
          expect(await fast.breakdown(params)).toEqual(await rowsOnly.breakdown(params));
          const asked = { tenantId: A, ...range, timeZone: zone, filters: {} };
          expect(await fast.deliverability(asked)).toEqual(await rowsOnly.deliverability(asked));
        },
      ),
      { numRuns: 40 },
    );
  }, 300_000);
});

describe('series, deliverability and credentials', () => {
  it('an hourly series starts at local midnight (+05:30) and sums to the row', async () => {
    const res = await get(
      `/analytics/breakdown?by=provider&from=${daysAgo(1)}&to=${daysAgo(1)}&interval=hour`,
    );
    expect(res.statusCode).toBe(200);
    const rows = (res.json() as { data: Row[] }).data;
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.series).toHaveLength(24);
      expect(row.series![0]!.start).toBe(
        new Date(Date.parse(`${daysAgo(1)}T00:00:00Z`) - 5.5 * 3_600_000).toISOString(),
      );
      expect(row.series!.reduce((n, p) => n + p.total, 0)).toBe(row.total);
    }
  });

  it('deliverability per provider: rates and sent→delivered quantiles', async () => {
    const res = await get('/analytics/deliverability?days=30');
    expect(res.statusCode).toBe(200);
    const { providers } = res.json() as {
      providers: {
        provider: string;
        total: number;
        delivered: number;
        bounced: number;
        delayed: number;
        medianDeliverySeconds: number | null;
        p95DeliverySeconds: number | null;
      }[];
    };
    const expected = expectedBreakdown(facts, 'provider', {}, daysAgo(29), localToday());
    expect(new Set(providers.map((p) => p.provider))).toEqual(new Set(expected.keys()));
    for (const p of providers) {
      const e = expected.get(p.provider)!;
      expect([p.total, p.delivered, p.bounced, p.delayed]).toEqual([
        e.total,
        e.delivered,
        e.bounced,
        e.delayed,
      ]);
      if (p.delivered > 0) {
        // Delivered 0..600 s after sent (the generator's spread).
        expect(p.medianDeliverySeconds).toBeGreaterThanOrEqual(0);
        expect(p.p95DeliverySeconds!).toBeGreaterThanOrEqual(p.medianDeliverySeconds!);
        expect(p.p95DeliverySeconds!).toBeLessThanOrEqual(600);
      }
    }
  });

  it('an API key needs analytics:read; over a real socket; bad input is a 400 naming the field', async () => {
    const withScope = await createKey(file.app, token, A, { scopes: ['analytics:read'] });
    const without = await createKey(file.app, token, A, { scopes: ['email:read'] });
    const base = await file.app.listen({ port: 0, host: '127.0.0.1' });
    const ask = (path: string, key: string) =>
      fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const ok = await ask('/analytics/breakdown?by=tag&days=7', withScope.key);
    expect(ok.status).toBe(200);
    expect((await ask('/analytics/breakdown?by=tag', without.key)).status).toBe(403);
    for (const bad of [
      'by=nope',
      'by=tag&days=91',
      'by=tag&from=2026-06-01',
      'by=tag&from=2026-06-10&to=2026-06-01',
      'by=tag&interval=week',
      'by=tag&from=2026-02-30&to=2026-03-01',
    ]) {
      const res = await ask(`/analytics/breakdown?${bad}`, withScope.key);
      expect(res.status, bad).toBe(400);
    }
    const tz = await file.app.inject({
      method: 'PUT',
      url: `/tenants/${A}/settings`,
      headers: bearer(token),
      payload: { timeZone: 'Mars/Olympus' },
    });
    expect(tz.statusCode).toBe(400);
    expect(tz.body).toMatch(/timeZone/);
  });

  it('another tenant sees none of it', async () => {
    const res = await get('/analytics/breakdown?by=provider&days=30', bearer(jwtFor(clock, `${B}-x`)));
    expect(res.statusCode).toBe(200);
    expect((res.json() as { data: Row[] }).data).toEqual([]);
  });
});

/**
 * The tag companion of the sliceable rollup (ClickHouse migration 0033, packages/read-models
 * dim-tags.ts): a breakdown or deliverability under a tag filter reads `email_dim_tags` by its
 * key, and answers what testing every row's tags in `email_dims` answers, and what an independent
 * count over the raw events answers; the ship writes it once per batch token.
 */
describe('a tag filter reads the tag companion', () => {
  it('by its primary key (tenant, tag), through email_dim_tags', async () => {
    const p = breakdownParams.parse({
      tenantId: A,
      fromDay: daysAgo(10),
      toDay: localToday(),
      timeZone: 'UTC',
      by: 'provider',
      filters: { tag: TAG_POOL[0]!, device: 'mobile' },
    });
    const companion = breakdownSql(p, 'rows', true, true);
    expect(companion.query).toContain('email_dim_tags');
    expect(breakdownSql(p, 'rows', true, false).query).not.toContain('email_dim_tags');
    const explained = await file.stores.ch.query({
      query: `EXPLAIN indexes = 1 ${companion.query}`,
      query_params: { ...companion.params, limit: 10 },
      format: 'TabSeparatedRaw',
    });
    const plan = await explained.text();
    expect(plan).toContain('email_dims_v1_tags');
    // The key's columns the condition uses: the tenant and the tag.
    expect(plan).toMatch(/PrimaryKey[\s\S]*Keys:[\s\S]*tenant_id[\s\S]*\btag\b/);
  });

  it('answers as every row’s tags tested, and as an independent count (property)', async () => {
    const fast = createBreakdownQueries(file.stores.ch);
    const rowsOnly = createBreakdownQueries(file.stores.ch, { tagRows: false, projections: false });
    const others = DIMENSIONS.filter((d) => d !== 'tag');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('UTC', 'Europe/Paris', 'Asia/Kolkata'),
        fc.constantFrom(...DIMENSIONS),
        fc.constantFrom(...TAG_POOL, 'no-such-tag'),
        fc.option(fc.constantFrom(...others), { nil: undefined }),
        fc.constantFrom(undefined, 'hour', 'day'),
        fc.tuple(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10 })),
        async (zone, by, tag, other, interval, [a, b]) => {
          const [fromDay, toDay] = [daysAgo(Math.max(a, b)), daysAgo(Math.min(a, b))];
          const otherValue = other === 'device' ? 'mobile' : other === 'provider' ? 'gmail' : '';
          const filters = { tag, ...(other ? { [other]: otherValue } : {}) };
          const params = { tenantId: A, fromDay, toDay, timeZone: zone, by, filters, interval, limit: 100 };
          const got = await fast.breakdown(params);
          expect(got).toEqual(await rowsOnly.breakdown(params));
          const expected = expectedBreakdown(factsOf(eventsOfA, zone), by, filters, fromDay, toDay);
          expect(new Map(got.rows.map((r) => [r.key, countsOf(r)]))).toEqual(
            new Map([...expected].map(([k, c]) => [k, countsOf(c)])),
          );
          const asked = { tenantId: A, fromDay, toDay, timeZone: zone, filters };
          expect(await fast.deliverability(asked)).toEqual(await rowsOnly.deliverability(asked));
        },
      ),
      { numRuns: 60 },
    );
  }, 300_000);
});

describe('the ship writes the companion with its version', () => {
  const row = (tenantId: string, tags: string[]): DimDelta => ({
    tenantId,
    bucket: `${daysAgo(1)} 10:15:00`,
    templateId: '',
    projectId: '',
    campaignId: '',
    sendingDomain: 'mail.example.com',
    mailboxProvider: 'gmail',
    tags,
    clientFamily: '',
    deviceType: '',
    bounceCategory: '',
    deliverySeconds: 0,
    counters: { ...zeroDimCounters(), total: 1, sent: 1 },
  });
  const sums = async (table: string, tenantId: string) => {
    const rs = await file.stores.ch.query({
      query: `SELECT tag, sum(total) AS n FROM ${table} WHERE tenant_id = {t:String} GROUP BY tag ORDER BY tag`,
      query_params: { t: tenantId },
      format: 'JSONEachRow',
    });
    return (await rs.json<{ tag: string; n: string | number }>()).map((r) => [r.tag, Number(r.n)]);
  };

  it('once per tag, once per token: a re-shipped batch is dropped by both tables', async () => {
    const t = `${A}-ship`;
    // An email may carry a tag twice (the send's tags are not deduplicated): one row for it.
    const rows = [row(t, ['alpha', 'beta']), row(t, []), row(t, ['alpha', 'alpha'])];
    await shipDimRows(file.stores.ch, 'email_dims_v1', 'tag-rows-batch-1', rows);
    await shipDimRows(file.stores.ch, 'email_dims_v1', 'tag-rows-batch-1', rows);
    expect(await sums('email_dims_v1_tags', t)).toEqual([
      ['alpha', 2],
      ['beta', 1],
    ]);
    await shipDimRows(file.stores.ch, 'email_dims_v1', 'tag-rows-batch-2', rows.slice(0, 1));
    expect(await sums('email_dims_v1_tags', t)).toEqual([
      ['alpha', 3],
      ['beta', 2],
    ]);
  });

  it('a new version gets its own companion, served with it; one without a companion still ships', async () => {
    const t = `${A}-version`;
    await createDimsVersion(file.stores.ch, 'email_dims_v1', 'email_dims_v7');
    await shipDimRows(file.stores.ch, 'email_dims_v7', 'tag-rows-v7', [row(t, ['gamma'])]);
    expect(await sums('email_dims_v7_tags', t)).toEqual([['gamma', 1]]);
    await serveDimsTable(file.stores.ch, 'email_dims_v7');
    const queries = createBreakdownQueries(file.stores.ch);
    const asked = {
      tenantId: t,
      fromDay: daysAgo(2),
      toDay: localToday(),
      timeZone: 'UTC',
      by: 'tag' as const,
    };
    expect((await queries.breakdown({ ...asked, filters: { tag: 'gamma' } })).rows.map((r) => r.key)).toEqual(
      ['gamma'],
    );
    // A version made before migration 0033 has no companion: its rows ship to it alone, serving
    // it leaves `email_dim_tags` on the last companion, and a tag filter then reads the version.
    await file.stores.ch.command({ query: 'CREATE TABLE email_dims_v8 AS email_dims_v1' });
    await shipDimRows(file.stores.ch, 'email_dims_v8', 'tag-rows-v8', [row(t, ['gamma']), row(t, ['gamma'])]);
    await serveDimsTable(file.stores.ch, 'email_dims_v8');
    const fresh = createBreakdownQueries(file.stores.ch);
    expect((await fresh.breakdown({ ...asked, filters: { tag: 'gamma' } })).rows.map((r) => r.total)).toEqual(
      [2],
    );
    await serveDimsTable(file.stores.ch, 'email_dims_v1');
    for (const table of ['email_dims_v7', 'email_dims_v7_tags', 'email_dims_v8'])
      await file.stores.ch.command({ query: `DROP TABLE ${table}` });
  });
});
