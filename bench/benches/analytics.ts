/**
 * Analytics latency at 10 M log entries of one tenant over 90 days. `email_daily_v2` is filled
 * directly (INSERT … SELECT FROM numbers()) with the rows the projector would have shipped for
 * that traffic, then `GET /analytics/summary|daily|top-templates?days=90` are timed on the real
 * api app (`app.inject`), and the ClickHouse queries alone.
 *
 * Scenarios (rows per batch_id is what the table size depends on, not the email count):
 *   batched: projector batches of 5000 events ≈ 1250 emails each → 8000 batch_ids, each with a
 *            row per template (20 + none) for its day and a late row per template for the day
 *            before (opens and clicks of older emails): 336 000 rows.
 *   trickle: live traffic at a few events per second, where every projector batch holds one or
 *            two events: one row (and one batch_id) per counter change. 10 M emails would be
 *            ≈ 30 M rows; the default is 10 M rows (BENCH_TRICKLE_ROWS) to stay within a minute,
 *            and query time grows linearly with rows. The rows are inserted with
 *            optimize_on_insert = 0, so they stay unmerged: the worst case before merges run.
 *   breakdown: the sliceable rollup of SPEC §26 (issue 44): BENCH_BREAKDOWN_EMAILS (10 M; --quick 1 M)
 *            emails over 90 days across BENCH_BREAKDOWN_TENANTS (1000) tenants in `email_dims_v1`,
 *            every `/analytics/breakdown` dimension and `/analytics/deliverability` through the api
 *            listening as `npm start` runs it, against the same aggregate on a Postgres copy of the
 *            rows (`lib/analytics-breakdown.ts`).
 * Targets (project issues): summary p50 ≤ 50 ms; every breakdown p95 ≤ 100 ms and ≥ 10× faster
 * than Postgres.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { FastifyInstance } from 'fastify';
import { breakdownAtScale } from '../lib/analytics-breakdown.js';
import { type CpuSnapshot, cpuBetween, cpuSnapshot } from '../lib/cpu.js';
import { openChdb, openProjectionDatabase } from '../lib/projection-stores.js';
import { emitMeasured, type Figure, withPeakRss } from '../lib/report.js';
import { benchEnv, quick } from '../lib/services.js';
import { distribution, round, rssMiB, timeMany } from '../lib/stats.js';

const TARGET = { op: '<=', value: 50 } as const;
const env = benchEnv(process.env);
const EMAILS = 10_000_000;
const DAYS = 90;
const TENANT = 'bench_tenant_10m';
const requests = Number(process.env.BENCH_ANALYTICS_REQUESTS ?? 200);
const trickleRows = Number(process.env.BENCH_TRICKLE_ROWS ?? 10_000_000);
const trickleRequests = Number(process.env.BENCH_TRICKLE_REQUESTS ?? 10);
const scenarios = (
  process.env.BENCH_ANALYTICS_SCENARIOS ?? (quick ? 'batched,breakdown' : 'batched,trickle,breakdown')
).split(',');
const breakdownEmails = Number(process.env.BENCH_BREAKDOWN_EMAILS ?? (quick ? 1_000_000 : 10_000_000));
const breakdownTenants = Number(process.env.BENCH_BREAKDOWN_TENANTS ?? 1000);
const breakdownRequests = Number(process.env.BENCH_BREAKDOWN_REQUESTS ?? (quick ? 10 : 40));
const breakdownPgRequests = Number(process.env.BENCH_BREAKDOWN_PG_REQUESTS ?? (quick ? 2 : 5));
const DAY_MS = 86_400_000;

const now = new Date();
const today = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS);
const firstDay = new Date(today.getTime() - (DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
const lastDay = today.toISOString().slice(0, 10);

const COLUMNS = 'tenant_id, day, template_id, total, sent, opened, clicked, bounced, complained, failed';

/**
 * 8000 batches × (21 rows on the batch's day + 21 late rows on the day before): 10 M emails.
 * Batches of the first day have no day before; their late rows are left out (a second row with
 * the same key would collapse into the first under FINAL, as it would in the projector's batch).
 */
function batchedInsert(): string {
  const batches = 8000; // 10 M / 1250 emails per batch
  return `
    INSERT INTO email_daily_v2 (${COLUMNS})
    SELECT '${TENANT}',
           toDate('${firstDay}') + toUInt32(di - late),
           if(t = 20, '', concat('tpl_', toString(t))),
           if(late = 1, 0, if(t = 20, 50, 60)),
           if(late = 1, 0, if(t = 20, 47, 57)),
           if(late = 1, 6, if(t = 20, 15, 20)),
           if(late = 1, 2, if(t = 20, 3, 5)),
           if(late = 1, 0, 2),
           if(late = 0 AND b % 50 = 0, 1, 0),
           if(late = 1, 0, 1)
      FROM (SELECT intDiv(number, 42) AS b, number % 21 AS t, toInt64(intDiv(number % 42, 21)) AS late,
                   toInt64(intDiv(intDiv(number, 42) * ${DAYS}, ${batches})) AS di
              FROM numbers(${batches * 42}))
     WHERE NOT (late = 1 AND di = 0)`;
}

/**
 * One row per counter change, each with its own batch_id (a UUID, as the projector's): rows are
 * spread evenly over the 90 days and 21 templates; a third queue an email (total), a third send
 * one (sent), a sixth are first opens, a twelfth first clicks.
 */
function trickleInsert(rows: number): string {
  return `
    INSERT INTO email_daily_v2 (${COLUMNS})
    SELECT '${TENANT}',
           toDate('${firstDay}') + toUInt32(intDiv(number * ${DAYS}, ${rows})),
           if(number % 21 = 20, '', concat('tpl_', toString(number % 21))),
           number % 3 = 0, number % 3 = 1, number % 6 = 2, number % 12 = 5, 0, 0, 0
      FROM numbers(${rows})
      SETTINGS optimize_on_insert = 0`;
}

/** The queries of packages/read-models/src/daily-analytics-queries.ts, for timing ClickHouse alone (± FINAL). */
function directQueries(final: boolean, table = 'email_daily_v2') {
  const from = `${table} AS d${final ? ' FINAL' : ''}`;
  const where = `d.tenant_id = '${TENANT}' AND d.day >= '${firstDay}' AND d.day <= '${lastDay}'`;
  return {
    summary: `SELECT sum(d.total) AS total, sum(d.sent) AS sent, sum(d.opened) AS opened, sum(d.clicked) AS clicked,
                     sum(d.bounced) AS bounced, sum(d.complained) AS complained, sum(d.failed) AS failed
                FROM ${from} WHERE ${where}`,
    daily: `SELECT toString(d.day) AS day, sum(d.sent) AS sent, sum(d.opened) AS opened, sum(d.clicked) AS clicked,
                   sum(d.bounced) AS bounced
              FROM ${from} WHERE ${where} GROUP BY d.day ORDER BY day`,
    'top-templates': `SELECT d.template_id AS template_id, sum(d.sent) AS sent, sum(d.opened) AS opened, sum(d.clicked) AS clicked
                        FROM ${from} WHERE ${where} AND d.template_id != ''
                       GROUP BY d.template_id HAVING sum(d.total) > 0
                       ORDER BY sent DESC, template_id ASC LIMIT 10`,
  };
}

interface ApiHandle {
  app: FastifyInstance;
  token: string;
}

/** The real api app, or the reason it could not be built (it is written concurrently). */
async function openApi(ch: ClickHouseClient, pool: import('pg').Pool): Promise<ApiHandle | string> {
  try {
    const api = await import('@tern/api');
    const auth = await import('@tern/auth');
    const secret = 'bench-secret-bench-secret-bench-secret';
    const app = await api.createApiApp({
      data: { pool, ch },
      jwt: auth.createJwtVerifier({ secret }),
      policy: { retentionDays: DAYS },
      http: { logger: false },
    });
    await app.ready();
    const token = auth.signDashboardToken({
      secret,
      tenantId: TENANT,
      role: 'owner',
      expiresInSeconds: 3600,
    });
    const probe = await app.inject({
      url: '/analytics/summary?days=90',
      headers: { authorization: `Bearer ${token}` },
    });
    if (probe.statusCode !== 200) return `api answered ${probe.statusCode}: ${probe.body.slice(0, 200)}`;
    return { app, token };
  } catch (error) {
    return `api unavailable: ${(error as Error).message}`;
  }
}

interface ScenarioPlan {
  /** Requests per api endpoint and per direct FINAL query. */
  requests: number;
  /** Time daily and top-templates directly too (else only summary). */
  allDirect: boolean;
  /** Also time `summary` once merges have folded the rows (OPTIMIZE … FINAL). */
  merged: boolean;
}

async function scenario(
  name: string,
  insertSql: string,
  ch: ClickHouseClient,
  api: ApiHandle | string,
  plan: ScenarioPlan,
): Promise<{ figures: Figure[]; details: Record<string, unknown> }> {
  await ch.command({ query: 'TRUNCATE TABLE email_daily_v2' });
  const fillStarted = performance.now();
  await ch.command({ query: insertSql });
  const fillMs = performance.now() - fillStarted;
  const stats = await (
    await ch.query({
      query: `SELECT count() AS rows, sum(total) AS emails,
                     (SELECT count() FROM system.parts WHERE table = 'email_daily_v2' AND active) AS parts,
                     (SELECT sum(data_compressed_bytes) FROM system.parts WHERE table = 'email_daily_v2' AND active) AS bytes
                FROM email_daily_v2`,
      format: 'JSONEachRow',
    })
  ).json<Record<string, string | number>>();
  const table = Object.fromEntries(Object.entries(stats[0] ?? {}).map(([k, v]) => [k, Number(v)]));
  console.error(`[analytics] ${name}: filled in ${Math.round(fillMs)} ms: ${JSON.stringify(table)}`);

  const figures: Figure[] = [];
  const details: Record<string, unknown> = { fillMs: Math.round(fillMs), table, plan };
  const record = (variant: string, endpoint: string, sample: number[], isTarget: boolean, note?: string) => {
    const d = distribution(sample);
    const fig = (metric: string, value: number, target = false): Figure => ({
      bench: 'analytics',
      variant: `${name}: ${variant}`,
      metric: `${endpoint} ${metric}`,
      value,
      unit: 'ms',
      ...(target ? { target: TARGET } : {}),
      ...(note ? { note } : {}),
    });
    figures.push(fig('p50', d.p50, isTarget), fig('p95', d.p95), fig('p99', d.p99));
    console.error(
      `[analytics] ${name}: ${variant} ${endpoint}: p50 ${d.p50.toFixed(1)} ms p95 ${d.p95.toFixed(1)} ms p99 ${d.p99.toFixed(1)} ms (n=${d.count})`,
    );
    return Object.fromEntries(Object.entries(d).map(([k, v]) => [k, round(v, 2)]));
  };
  const timeQuery = (n: number, query: string) =>
    timeMany(n, async () => {
      const rs = await ch.query({ query, format: 'JSONEachRow' });
      await rs.json();
    });

  const before: CpuSnapshot = cpuSnapshot();
  const started = performance.now();
  if (typeof api !== 'string') {
    const apiDetails: Record<string, unknown> = {};
    for (const endpoint of ['summary', 'daily', 'top-templates']) {
      let status = 0;
      const sample = await timeMany(plan.requests, async () => {
        const res = await api.app.inject({
          url: `/analytics/${endpoint}?days=90`,
          headers: { authorization: `Bearer ${api.token}` },
        });
        status = res.statusCode;
      });
      apiDetails[endpoint] = { status, ...record('api (inject)', endpoint, sample, endpoint === 'summary') };
    }
    details.api = apiDetails;
  }
  const chDetails: Record<string, unknown> = {};
  for (const final of [false]) {
    for (const [endpoint, query] of Object.entries(directQueries(final))) {
      if (!plan.allDirect && endpoint !== 'summary') continue;
      const sample = await timeQuery(final ? plan.requests : Math.ceil(plan.requests / 4), query);
      // Without an api, the direct FINAL query is what the target is judged on.
      const isTarget = typeof api === 'string' && endpoint === 'summary';
      chDetails[`${endpoint}${final ? '' : ' (no FINAL)'}`] = record(
        final ? 'clickhouse FINAL' : 'clickhouse no FINAL',
        endpoint,
        sample,
        isTarget,
        isTarget ? 'api not available: direct SQL' : undefined,
      );
    }
  }
  if (plan.merged && typeof api !== 'string') {
    // Steady state: background merges fold the rows of one (tenant, day, template) into one.
    await ch.command({ query: 'OPTIMIZE TABLE email_daily_v2 FINAL' });
    const sample = await timeMany(Math.max(50, plan.requests), async () => {
      await api.app.inject({
        url: '/analytics/summary?days=90',
        headers: { authorization: `Bearer ${api.token}` },
      });
    });
    details.afterMerges = record('api (inject) after merges', 'summary', sample, false);
  }
  details.clickhouse = chDetails;
  details.cpuPercentOfOneCore = cpuBetween(before, cpuSnapshot());
  details.queryWallMs = Math.round(performance.now() - started);
  details.rssMiB = rssMiB();
  return { figures, details };
}

const started = performance.now();
const chdb = await openChdb();
// chDB runs in this process: its engine alone accounts for much of the RSS printed at the end.
const rssAfterChdbOpenMiB = rssMiB();
const store = await openProjectionDatabase(env.databaseUrl, { max: 4 });
const figures: Figure[] = [];
const details: Record<string, unknown> = { emails: EMAILS, days: DAYS, requests, firstDay, lastDay };
try {
  // A few named templates, as a dashboard would show them.
  await store.pool.query(
    `INSERT INTO templates (tenant_id, id, name, subject)
     SELECT $1, 'tpl_' || i, 'Template ' || i, 'Subject ' || i FROM generate_series(0, 19) AS i`,
    [TENANT],
  );
  const api = await openApi(chdb.ch, store.pool);
  if (typeof api === 'string') console.error(`[analytics] ${api}; timing the SQL directly`);
  details.api = typeof api === 'string' ? api : 'createApiApp + app.inject';
  if (scenarios.includes('batched')) {
    const r = await scenario('batched', batchedInsert(), chdb.ch, api, {
      requests,
      allDirect: true,
      merged: false,
    });
    figures.push(...r.figures);
    details.batched = r.details;
  }
  if (scenarios.includes('trickle')) {
    const r = await scenario(`trickle ${trickleRows / 1e6}M rows`, trickleInsert(trickleRows), chdb.ch, api, {
      requests: trickleRequests,
      allDirect: false,
      merged: true,
    });
    figures.push(...r.figures);
    details.trickle = r.details;
  }
  if (typeof api !== 'string') await api.app.close();
  if (scenarios.includes('breakdown')) {
    const r = await breakdownAtScale({
      ch: chdb.ch,
      pool: store.pool,
      databaseUrl: store.db.url,
      emails: breakdownEmails,
      tenants: breakdownTenants,
      days: DAYS,
      requests: breakdownRequests,
      pgRequests: breakdownPgRequests,
    });
    figures.push(...r.figures);
    details.breakdown = r.details;
  }
} finally {
  await store.close();
  await chdb.close();
}
emitMeasured('analytics', figures, { ...withPeakRss(details), rssAfterChdbOpenMiB }, started);
