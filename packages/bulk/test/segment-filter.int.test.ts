import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase } from '../../../test/support/services.js';
import {
  compileSegmentFilter,
  MAX_FILTER_DEPTH,
  type SegmentFilter,
  segmentFilterSchema,
} from '../src/segments/filter.js';

// The segment filter (SPEC §27) over a real Postgres: each clause, their combinations, and the
// "does contact X match" form the automations use.

const T = 'seg-filter-t';
const OTHER = 'seg-filter-other';
const AT = new Date('2026-06-15T12:00:00Z');
const daysAgo = (d: number) => new Date(AT.getTime() - d * 86_400_000);

let db: { url: string; drop(): Promise<void> };
let pool: pg.Pool;

const contacts: {
  id: string;
  tenant?: string;
  properties?: object;
  topics?: object;
  audiences?: string[];
}[] = [
  {
    id: 'ct_a',
    properties: { plan: 'pro', seats: 12, beta: true, signup: '2026-01-10T00:00:00.000Z' },
    audiences: ['news'],
  },
  { id: 'ct_b', properties: { plan: 'free', seats: 1 }, topics: { top_weekly: 'opt_out' } },
  {
    id: 'ct_c',
    properties: { plan: 'Pro Max', seats: '7' },
    topics: { top_launch: 'opt_in' },
    audiences: ['news'],
  },
  { id: 'ct_d' },
  { id: 'ct_x', tenant: OTHER, properties: { plan: 'pro' }, audiences: ['news'] },
];

beforeAll(async () => {
  db = await createFreshDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined);
  await migratePostgres(pool);
  for (const c of contacts)
    await pool.query(
      `INSERT INTO contacts (tenant_id, id, email, properties, topics, audiences, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [
        c.tenant ?? T,
        c.id,
        `${c.id}@example.com`,
        JSON.stringify(c.properties ?? {}),
        JSON.stringify(c.topics ?? {}),
        c.audiences ?? [],
        AT,
      ],
    );
  await pool.query(
    `INSERT INTO topics (tenant_id, id, name, default_subscription, public, created_at, updated_at)
     VALUES ($1, 'top_weekly', 'Weekly', 'opt_in', true, $2, $2), ($1, 'top_launch', 'Launches', 'opt_out', true, $2, $2)`,
    [T, AT],
  );
  await pool.query(
    `INSERT INTO recipient_engagement (tenant_id, email, last_received_at, last_opened_at, last_clicked_at, last_bounced_at)
     VALUES ($1, 'ct_a@example.com', $2, $2, NULL, NULL),
            ($1, 'ct_b@example.com', $3, $3, $3, NULL),
            ($1, 'ct_c@example.com', NULL, NULL, NULL, $2),
            ($4, 'ct_x@example.com', $2, $2, $2, $2)`,
    [T, daysAgo(2), daysAgo(40), OTHER],
  );
  await pool.query(
    `INSERT INTO recipient_tags (tenant_id, tag, email, last_at)
     VALUES ($1, 'onboarding', 'ct_d@example.com', $2), ($3, 'onboarding', 'ct_x@example.com', $2)`,
    [T, AT, OTHER],
  );
  await pool.query(
    `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at)
     VALUES ($1, 'em_1', 'campaign:cmp_1', 0, 'ct_c', $2), ($1, 'em_2', 'sequence:seq_1', 0, 'ct_d', $2)`,
    [T, AT],
  );
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

async function matching(filter: SegmentFilter): Promise<string[]> {
  const params: unknown[] = [];
  const where = compileSegmentFilter(segmentFilterSchema.parse(filter), { tenantId: T, params, at: AT });
  const { rows } = await pool.query<{ id: string }>(
    `SELECT c.id FROM contacts c WHERE ${where} ORDER BY c.id`,
    params,
  );
  return rows.map((r) => r.id);
}

describe('segmentFilterSchema', () => {
  it('accepts every clause of SPEC §27', () => {
    const all: SegmentFilter = {
      and: [
        {
          or: [
            { property: 'plan', op: 'eq', value: 'pro' },
            { property: 'plan', op: 'exists' },
          ],
        },
        { not: { audience: 'news' } },
        { topic: 'top_1' },
        { engagement: 'opened', days: 30 },
        { tag: 'welcome' },
        { campaign: 'cmp_1' },
      ],
    };
    expect(segmentFilterSchema.parse(all)).toEqual(all);
  });

  it('rejects unknown keys, bad ops, values that cannot compare, and unbounded trees', () => {
    const bad: unknown[] = [
      {},
      { and: [] },
      { audience: 'x', tag: 'y' },
      { property: 'plan', op: 'like', value: 'x' },
      { property: 'plan', op: 'exists', value: 'x' },
      { property: 'plan', op: 'eq' },
      { property: 'plan', op: 'gt', value: true },
      { property: 'plan', op: 'contains', value: 3 },
      { property: '1plan', op: 'eq', value: 'x' },
      { engagement: 'opened', days: 0 },
      { engagement: 'viewed', days: 3 },
      { or: Array.from({ length: 101 }, () => ({ tag: 'x' })) },
    ];
    let deep: unknown = { tag: 'x' };
    for (let i = 0; i < MAX_FILTER_DEPTH; i++) deep = { not: deep };
    bad.push(deep);
    for (const b of bad) expect(segmentFilterSchema.safeParse(b).success, JSON.stringify(b)).toBe(false);
  });
});

describe('compileSegmentFilter', () => {
  it('properties: typed comparisons, a value of another type never matches', async () => {
    expect(await matching({ property: 'plan', op: 'eq', value: 'pro' })).toEqual(['ct_a']);
    expect(await matching({ property: 'plan', op: 'neq', value: 'pro' })).toEqual(['ct_b', 'ct_c', 'ct_d']);
    expect(await matching({ property: 'seats', op: 'gte', value: 7 })).toEqual(['ct_a']);
    expect(await matching({ property: 'seats', op: 'lt', value: 100 })).toEqual(['ct_a', 'ct_b']);
    expect(await matching({ property: 'plan', op: 'contains', value: 'PRO' })).toEqual(['ct_a', 'ct_c']);
    expect(await matching({ property: 'beta', op: 'eq', value: true })).toEqual(['ct_a']);
    expect(await matching({ property: 'seats', op: 'exists' })).toEqual(['ct_a', 'ct_b', 'ct_c']);
    expect(await matching({ property: 'signup', op: 'gt', value: '2026-01-01T00:00:00.000Z' })).toEqual([
      'ct_a',
    ]);
  });

  it('audience, topic (own choice, else the default), tag and campaign', async () => {
    expect(await matching({ audience: 'news' })).toEqual(['ct_a', 'ct_c']);
    expect(await matching({ topic: 'top_weekly' })).toEqual(['ct_a', 'ct_c', 'ct_d']);
    expect(await matching({ topic: 'top_launch' })).toEqual(['ct_c']);
    expect(await matching({ topic: 'top_unknown' })).toEqual([]);
    expect(await matching({ tag: 'onboarding' })).toEqual(['ct_d']);
    expect(await matching({ campaign: 'cmp_1' })).toEqual(['ct_c']);
  });

  it('engagement windows end at the given instant', async () => {
    expect(await matching({ engagement: 'opened', days: 7 })).toEqual(['ct_a']);
    expect(await matching({ engagement: 'opened', days: 60 })).toEqual(['ct_a', 'ct_b']);
    expect(await matching({ engagement: 'clicked', days: 30 })).toEqual([]);
    expect(await matching({ engagement: 'bounced', days: 3 })).toEqual(['ct_c']);
    expect(await matching({ engagement: 'received', days: 41 })).toEqual(['ct_a', 'ct_b']);
  });

  it('and, or, not combine; another tenant is never matched', async () => {
    expect(
      await matching({
        and: [{ audience: 'news' }, { not: { engagement: 'bounced', days: 30 } }],
      }),
    ).toEqual(['ct_a']);
    expect(await matching({ or: [{ tag: 'onboarding' }, { campaign: 'cmp_1' }] })).toEqual(['ct_c', 'ct_d']);
    expect(await matching({ not: { or: [{ audience: 'news' }, { tag: 'onboarding' }] } })).toEqual(['ct_b']);
  });

  it('"does contact X match" by adding c.id = $n to the same parameters', async () => {
    const check = async (id: string) => {
      const params: unknown[] = [];
      const where = compileSegmentFilter({ audience: 'news' }, { tenantId: T, params });
      params.push(id);
      const { rowCount } = await pool.query(
        `SELECT 1 FROM contacts c WHERE ${where} AND c.id = $${params.length}`,
        params,
      );
      return rowCount === 1;
    };
    expect(await check('ct_a')).toBe(true);
    expect(await check('ct_b')).toBe(false);
    expect(await check('ct_x')).toBe(false);
  });
});
