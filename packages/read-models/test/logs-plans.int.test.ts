// The plans of the logs statements packages/read-models owns (`logsStatement`, SPEC §19, issue 10):
// on a table of realistic size, no query of a page, a deep page or a cursor sorts the log or scans
// the table. Rows are inserted with SQL (the projector is not under test here), the counters
// computed from them, then ANALYZE. A Postgres server only: the plans are the server planner's.
// The log is partitioned by day (migration 0560): the rows carry ids made at their queued time, in
// the day partitions of their nine days (one in ten of an older shape: the DEFAULT); the pages walk each day's
// order index, merged, never a sort.

import { DAY_MS } from '@tern/domain';
import { idTime } from '@tern/kernel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { ensureLogDays, type LogsFilter, logsPage, logsStatement } from '../src/index.js';

const TENANTS = 20;
const PER_TENANT = 10_000;
const NOW = '2026-06-15T12:00:00.000Z';
const cutoff = new Date('2026-03-17T00:00:00.000Z');
let db: LogDatabase;
/** Email g's queued time: 3.7 s apart, newest first (nine days: day partitions of ≈ 23 000 rows). */
const createdMs = (g: number) => Date.parse(NOW) - g * 3_700;
/**
 * Email g's id: made at its queued time, as the api makes one; one in ten of an older shape (in no
 * day's range: the DEFAULT partition, as on a log that predates migration 0560).
 */
const idOf = (g: number) =>
  g % 10 === 0 ? `em_x${g}` : `em_${idTime(createdMs(g))}${String(g).padStart(16, '0')}`;
/** Index name → its parent's (a day partition's index answers for the log's). */
let parentIndex = new Map<string, string>();
/** The log's table or one of its partitions. */
const isLog = (relation: string | undefined) => /^email_logs(_default|_d\d{8})?$/.test(relation ?? '');

beforeAll(async () => {
  db = await openLogDatabase();
  const oldest = createdMs(TENANTS * PER_TENANT);
  const days = Math.ceil((Date.parse(NOW) - oldest) / DAY_MS) + 1;
  expect((await ensureLogDays(db.pool, new Date(oldest), days)).made).toHaveLength(days);
  const ids = Array.from({ length: TENANTS * PER_TENANT }, (_, i) => idOf(i + 1));
  await db.pool.query(
    `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, tags, created_at, state, version, project_id)
     SELECT 't' || (g % ${TENANTS}), ($2::text[])[g], 'user' || (g % 5000) || '@example.com', 's',
            (ARRAY['QUEUED','SENT','DELIVERED','BOUNCED','FAILED'])[1 + g % 5],
            CASE WHEN g % 3 = 0 THEN '["receipt"]'::jsonb ELSE '[]'::jsonb END,
            $1::timestamptz - (g * interval '3.7 seconds'), '{}'::jsonb, 1,
            -- Five projects per tenant, and emails without one.
            CASE WHEN g % 7 < 5 THEN 'prj_' || (g % 7) END
       FROM generate_series(1, ${TENANTS * PER_TENANT}) AS g`,
    [NOW, ids],
  );
  expect(
    (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM email_logs_default')).rows[0]!.n,
  ).toBe((TENANTS * PER_TENANT) / 10);
  const { rows } = await db.pool.query<{ child: string; parent: string }>(
    `SELECT c.relname AS child, p.relname AS parent
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE c.relkind = 'i'`,
  );
  parentIndex = new Map(rows.map((r) => [r.child, r.parent]));
  await db.pool.query(
    `INSERT INTO email_log_counts (tenant_id, project_id, day, status, n)
     SELECT tenant_id, '', (created_at AT TIME ZONE 'UTC')::date, status, count(*) FROM email_logs GROUP BY 1, 3, 4
     UNION ALL
     SELECT tenant_id, project_id, (created_at AT TIME ZONE 'UTC')::date, status, count(*) FROM email_logs
      WHERE project_id IS NOT NULL GROUP BY 1, 2, 3, 4`,
  );
  await db.pool.query(
    `INSERT INTO email_log_hour_counts (tenant_id, project_id, hour, status, n)
     SELECT tenant_id, '', date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', status, count(*) FROM email_logs GROUP BY 1, 3, 4
     UNION ALL
     SELECT tenant_id, project_id, date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', status, count(*) FROM email_logs
      WHERE project_id IS NOT NULL GROUP BY 1, 2, 3, 4`,
  );
  await db.pool.query('ANALYZE email_logs');
  await db.pool.query('ANALYZE email_log_counts');
  await db.pool.query('ANALYZE email_log_hour_counts');
}, 120_000);

afterAll(async () => {
  await db?.close();
});

type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
};

/** Every node of a plan, with whether it reads email_logs somewhere below it. */
function nodes(plan: PlanNode): { node: PlanNode; readsLogs: boolean }[] {
  const out: { node: PlanNode; readsLogs: boolean }[] = [];
  const visit = (n: PlanNode): boolean => {
    let reads = isLog(n['Relation Name']);
    for (const child of n.Plans ?? []) reads = visit(child) || reads;
    out.push({ node: n, readsLogs: reads });
    return reads;
  };
  visit(plan);
  return out;
}

/**
 * `strict`: the page is an ordered walk of an order index, never a sort. The others may also be
 * planned as a bitmap scan of the order index and a sort of the matching entries only, which the
 * planner picks when it expects few matches (a rare tag or recipient): cost ∝ matches in the range.
 */
const filters: [string, LogsFilter, boolean][] = [
  ['none', {}, true],
  ['status', { status: 'DELIVERED' }, true],
  ['from/to', { from: '2026-06-08T00:00:00Z', to: '2026-06-12T00:00:00Z' }, false],
  ['tag', { tag: 'receipt' }, false],
  ['q', { q: 'user12' }, false],
  ['status + q + tag', { status: 'SENT', q: 'user1', tag: 'receipt' }, false],
  ['projectId', { projectId: 'prj_3' }, true],
  ['projectId + status', { projectId: 'prj_3', status: 'BOUNCED' }, true],
  ['projectId + tag', { projectId: 'prj_3', tag: 'receipt' }, false],
  [
    'projectId + from/to',
    { projectId: 'prj_3', from: '2026-06-08T00:00:00Z', to: '2026-06-12T00:00:00Z' },
    false,
  ],
];
const positions = [
  ['page 1', { page: 1, cursor: null }],
  ['page 500 (offset 9 980)', { page: 500, cursor: null }],
  ['cursor', { page: 1, cursor: { createdAt: '2026-06-10T10:00:00.000000', id: idOf(100), page: 7 } }],
] as const;

describe('logs statement plans (EXPLAIN)', () => {
  /** The plan of the statement with its parameters: `generic` as a prepared statement may use it. */
  async function planOf(text: string, values: unknown[], generic: boolean): Promise<PlanNode> {
    const client = await db.pool.connect();
    try {
      if (!generic) {
        const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          `EXPLAIN (FORMAT JSON) ${text}`,
          values,
        );
        return rows[0]!['QUERY PLAN'][0].Plan;
      }
      // The plan a named statement (pg `name:`) may settle on after its fifth execution: the
      // parameters unknown when planning (Postgres 15 has no EXPLAIN (GENERIC_PLAN)).
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE plan_probe AS ${text}`);
      const args = values.map((v) => client.escapeLiteral(String(v))).join(', ');
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (FORMAT JSON) EXECUTE plan_probe(${args})`,
      );
      return rows[0]!['QUERY PLAN'][0].Plan;
    } finally {
      await client.query('DEALLOCATE ALL; RESET plan_cache_mode').catch(() => undefined);
      client.release();
    }
  }

  const plans = [
    ['custom plan', false],
    ['generic plan', true],
  ] as const;
  const combos = filters.flatMap(([f, filter, strict]) =>
    positions.flatMap(([p, pos]) =>
      plans.map(([kind, generic]) => [`${f}, ${p}, ${kind}`, filter, pos, strict, generic] as const),
    ),
  );
  it.each(combos)(
    '%s: no Seq Scan of email_logs; no Sort over an index walk',
    async (_, filter, pos, strict, generic) => {
      const { text, values, prepare } = logsStatement({ tenantId: 't1', cutoff, limit: 20, filter, ...pos });
      // A statement sent unnamed is planned with its values every time: no generic plan.
      expect(prepare).toBe(!(filter.status !== undefined && filter.projectId !== undefined));
      if (generic && !prepare) return;
      const plan = await planOf(text, values, generic);
      const all = nodes(plan);
      if (process.env.SHOW_PLAN) console.log(JSON.stringify(plan, null, 1));
      const onLogs = all.filter((n) => isLog(n.node['Relation Name']));
      expect(onLogs.length).toBeGreaterThan(0);
      expect(onLogs.map((n) => n.node['Node Type'])).not.toContain('Seq Scan');
      // Index scans of the order indexes; the count of a filtered total may be a bitmap scan of them.
      const indexes = all
        .map((n) => n.node['Index Name'])
        .filter((name) => name !== undefined)
        .map((name) => parentIndex.get(name) ?? name);
      for (const name of indexes)
        expect(name).toMatch(
          /^(email_logs_tenant_(status_)?order_idx|email_logs_tenant_project_created_idx|email_logs_pkey|email_log_counts_pkey|email_log_hour_counts_pkey)$/,
        );
      for (const n of onLogs)
        expect(n.node['Node Type']).toMatch(/^(Index Scan|Index Only Scan|Bitmap Heap Scan)$/);
      // Equality filters only: the total is read from the counters; projectId walks its index.
      const countedOnly = Object.keys(filter).every((k) => k === 'status' || k === 'projectId');
      expect(all.some((n) => n.node['Relation Name'] === 'email_log_counts')).toBe(countedOnly);
      if (filter.projectId !== undefined && filter.status === undefined)
        expect(new Set(indexes.filter((name) => name.startsWith('email_logs_')))).toEqual(
          new Set(['email_logs_tenant_project_created_idx']),
        );
      const sorts = all.filter((n) => /Sort/.test(n.node['Node Type']) && n.readsLogs);
      if (strict) expect(sorts).toEqual([]);
      // A sort may only ever sit on the matching entries: on the one table, a bitmap scan, never an
      // index walk; across day partitions the planner may read a day's entries by an index scan
      // instead (costed per day, as the bitmap), each bounded by the tenant in its index condition.
      for (const sort of sorts) {
        const below = nodes(sort.node).filter((n) => isLog(n.node['Relation Name']));
        for (const { node } of below) {
          if (node['Node Type'] === 'Bitmap Heap Scan') continue;
          expect(node['Relation Name']).not.toBe('email_logs');
          expect(node['Node Type']).toMatch(/^Index (Only )?Scan$/);
          expect(node['Index Cond']).toMatch(/tenant_id = /);
        }
      }
    },
  );
});

describe('logs statements in the plan cache', () => {
  // A named statement is planned with its values five times, then Postgres keeps its generic plan
  // when that looks no dearer. With the page's row count a parameter the generic plan of a first
  // page was costed for a tenth of the tenant's rows, so the page was planned anew at every request:
  // across the day partitions most of its time (8.8 ms against 0.8 ms unpartitioned at 94 days).
  // A first page fetches a fixed number of rows (`fetchSize`): limits 20 and 17 share a text (21
  // rows), 50 has its own. A cursor page keeps the limit a parameter (one text for every limit),
  // with which it settles. Not here: a page number above 1 (its OFFSET a parameter) is planned with
  // its values each time, as before.
  it.each([
    ['page 1', { page: 1, cursor: null }, 2, 3],
    [
      'a cursor page',
      { page: 1, cursor: { createdAt: '2026-06-10T10:00:00.000000', id: idOf(100), page: 7 } },
      1,
      4,
    ],
  ] as const)('%s settles on its generic plan', async (_, pos, texts, generic) => {
    const client = await db.pool.connect();
    try {
      await client.query('DEALLOCATE ALL');
      for (const limit of [20, 20, 20, 20, 20, 20, 20, 17, 50]) {
        const page = await logsPage(client, { tenantId: 't1', cutoff, limit, filter: {}, ...pos });
        expect(page.entries).toHaveLength(limit);
        expect(page.next).not.toBeNull();
      }
      const { rows } = await client.query<{ generic_plans: string; custom_plans: string }>(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'logs%' ORDER BY custom_plans DESC",
      );
      expect(rows).toHaveLength(texts);
      expect(Number(rows[0]!.custom_plans)).toBe(5);
      expect(Number(rows[0]!.generic_plans)).toBe(generic);
    } finally {
      await client.query('DEALLOCATE ALL').catch(() => undefined);
      client.release();
    }
  });
});
