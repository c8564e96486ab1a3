import { DIM_COUNTER_NAMES, type DimDelta, zeroDimCounters } from '@tern/domain';
import { createMailboxResolver } from '@tern/projector';
import {
  breakdownParams,
  breakdownSql,
  createBreakdownQueries,
  createDimsVersion,
  DIMENSIONS,
  serveDimsTable,
  shipDimRows,
} from '@tern/read-models';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import {
  type Counts,
  expectedBreakdown,
  factsOf,
  generateHistory,
  RECIPIENT_DOMAINS,
  TAG_POOL,
} from '../datasets.js';
import { closeAll, NOW, project, testApp } from '../support.js';

/**
 * The tag companion of the sliceable rollup (ClickHouse migration 0033, packages/read-models
 * dim-tags.ts) on chDB: a breakdown or deliverability under a tag filter reads `email_dim_tags`
 * by its key, and answers what testing every row's tags in `email_dims` answers, and what an
 * independent count over the raw events answers; the ship writes it once per batch token.
 */

const file = testApp('tagrows');
const { A } = file;
let dns: TestDnsServer;
let eventsOfA: ReturnType<typeof generateHistory>;
const countsOf = (r: Counts) => Object.fromEntries(DIM_COUNTER_NAMES.map((c) => [c, r[c]]));
const ZONES = ['UTC', 'Europe/Paris', 'Asia/Kolkata'] as const;
const today = () => new Date(NOW).toISOString().slice(0, 10);
const daysAgo = (n: number) =>
  new Date(Date.parse(`${today()}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  dns = await startTestDnsServer();
  for (const d of RECIPIENT_DOMAINS) if (d.mx) dns.mx(d.domain, d.mx);
  eventsOfA = generateHistory(A, NOW, 300, 11);
  const resolver = createMailboxResolver({ servers: [dns.server] });
  await project(file.stores, eventsOfA, await resolver.prepare(eventsOfA));
}, 120_000);

afterAll(() => closeAll(dns));

describe('a tag filter reads the tag companion', () => {
  it('by its primary key (tenant, tag), through email_dim_tags', async () => {
    const p = breakdownParams.parse({
      tenantId: A,
      fromDay: daysAgo(10),
      toDay: today(),
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
        fc.constantFrom(...ZONES),
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
    const rows = [row(t, ['alpha', 'beta']), row(t, []), row(t, ['alpha'])];
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
    const asked = { tenantId: t, fromDay: daysAgo(2), toDay: today(), timeZone: 'UTC', by: 'tag' as const };
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
