/**
 * Segments (SPEC §27, issue 47): the count of a segment over `BENCH_SEGMENT_CONTACTS` contacts
 * (default 1 000 000) of one tenant with an engagement clause, through `countMatching` — the
 * statement `GET /segments/:id/contacts` and `POST /segments/count` run. The engagement clause
 * reads the projector's per-recipient rollup (`recipient_engagement`, one index range), not the
 * tenant's emails. Against the same run's plain `count(*)` of the tenant's contacts (the floor any
 * count of them pays). Another tenant holds a tenth as many contacts, so tenant scoping is real.
 * The EXPLAIN (ANALYZE, BUFFERS) plan of the engagement-and-property count is printed (stderr) and
 * kept in the results. Median of 3 runs after one warm-up; target ≤ 2 s.
 */
import { compileSegmentFilter, countMatching, type SegmentFilter } from '@tern/bulk';
import { migratePostgres } from '@tern/stores';
import pg from 'pg';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { benchEnv, createFreshDatabase, runTag } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';

const CONTACTS = Number(process.env.BENCH_SEGMENT_CONTACTS ?? 1_000_000);
const started = performance.now();
const env = benchEnv(process.env);
const tag = runTag();
const T = `seg_${tag}`;
const OTHER = `seg_other_${tag}`;
const AT = new Date('2026-06-15T12:00:00Z');
const log = (line: string) => console.error(`[segments] ${line}`);

const db = await createFreshDatabase(env.databaseUrl);
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const figures: Figure[] = [];
const details: Record<string, unknown> = { contacts: CONTACTS };
const fig = (variant: string, metric: string, value: number, unit: string, target?: Figure['target']) =>
  figures.push({ bench: 'segments', variant, metric, value, unit, ...(target ? { target } : {}) });

/** Contacts `c<i>@<tenant>.test`: a tenth on plan pro; 40 % of them with engagement spread over 120 days. */
async function seed(tenant: string, n: number) {
  await pool.query(
    `INSERT INTO contacts (tenant_id, id, email, properties, audiences, created_at, updated_at)
     SELECT $1, 'ct_' || lpad(i::text, 24, '0'), 'c' || i || '@' || $1 || '.test',
            jsonb_build_object('plan', CASE WHEN i % 10 = 0 THEN 'pro' ELSE 'free' END, 'seats', i % 50),
            CASE WHEN i % 2 = 0 THEN ARRAY['news'] ELSE '{}'::text[] END, $3, $3
       FROM generate_series(1, $2::int) AS i`,
    [tenant, n, AT],
  );
  await pool.query(
    `INSERT INTO recipient_engagement (tenant_id, email, last_received_at, last_opened_at, last_clicked_at, last_bounced_at)
     SELECT $1, 'c' || i || '@' || $1 || '.test',
            $3::timestamptz - make_interval(days => (i % 120)),
            CASE WHEN i % 3 = 0 THEN $3::timestamptz - make_interval(days => (i % 90)) END,
            CASE WHEN i % 9 = 0 THEN $3::timestamptz - make_interval(days => (i % 60)) END,
            CASE WHEN i % 50 = 0 THEN $3::timestamptz - make_interval(days => (i % 30)) END
       FROM generate_series(1, $2::int) AS i WHERE i % 5 < 2`,
    [tenant, n, AT],
  );
}

async function timed(run: () => Promise<number>): Promise<{ ms: number; total: number }> {
  await run(); // warm-up
  const runs: { ms: number; total: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const total = await run();
    runs.push({ ms: performance.now() - t0, total });
  }
  runs.sort((a, b) => a.ms - b.ms);
  return runs[1]!;
}

try {
  await migratePostgres(pool);
  const t0 = performance.now();
  await seed(T, CONTACTS);
  await seed(OTHER, Math.max(1, Math.floor(CONTACTS / 10)));
  // A table in service is vacuumed by autovacuum; after a bulk load, do it now.
  await pool.query('VACUUM ANALYZE contacts');
  await pool.query('VACUUM ANALYZE recipient_engagement');
  details.seedSeconds = round((performance.now() - t0) / 1000, 1);
  log(
    `seeded ${CONTACTS} contacts (+${Math.floor(CONTACTS / 10)} of another tenant) in ${details.seedSeconds} s`,
  );

  const plain = await timed(async () => {
    const { rows } = await pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM contacts c WHERE c.tenant_id = $1',
      [T],
    );
    return Number(rows[0]!.n);
  });
  const variant = `${CONTACTS} contacts, one tenant`;
  fig(variant, 'count(*) of the tenant (floor)', plain.ms, 'ms');

  const filters: [string, SegmentFilter][] = [
    ['opened in 30 days', { engagement: 'opened', days: 30 }],
    [
      'opened in 30 days and plan = pro',
      {
        and: [
          { engagement: 'opened', days: 30 },
          { property: 'plan', op: 'eq', value: 'pro' },
        ],
      },
    ],
  ];
  const counts: Record<string, { ms: number; total: number }> = {};
  for (const [name, filter] of filters) {
    const r = await timed(() => countMatching(pool, T, filter, AT));
    counts[name] = r;
    log(`${name}: ${r.total} contacts in ${round(r.ms, 1)} ms`);
    fig(`${variant}: ${name}`, 'count', r.ms, 'ms', { op: '<=', value: 2000 });
    fig(`${variant}: ${name}`, 'ratio to count(*) of the tenant', r.ms / plain.ms, '×');
  }
  details.counts = counts;

  const params: unknown[] = [];
  const where = compileSegmentFilter(filters[1]![1], { tenantId: T, params, at: AT });
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM contacts c WHERE ${where}`,
    params,
  );
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
  details.plan = plan;
  log(`plan of "${filters[1]![0]}":\n${plan}`);
} finally {
  await pool.end();
  await db.drop();
}

const result: BenchResult = {
  bench: 'segments',
  figures,
  details,
  rssMiB: rssMiB(),
  wallMs: Math.round(performance.now() - started),
};
emitResult(result);
