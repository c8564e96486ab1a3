/**
 * The sliceable rollup at scale (SPEC §26, issue 44), for `npm run bench -- analytics`: `email_dims_v1`
 * (behind the `email_dims` view) is filled in chDB with `INSERT … SELECT FROM numbers()`, one row per
 * email — what the signed deltas of an email sum to once merged — for `emails` emails over `days`
 * days across `tenants` tenants; the same rows are then copied into a Postgres table (`COPY … FROM
 * STDIN`, CSV out of chDB in slices of tenants) indexed on (tenant_id, bucket), `VACUUM ANALYZE`d.
 *
 * Distributions (hashes of the row number, so every run fills the same rows; see `fillSql`):
 *   tenants   skewed: tenant = ⌊tenants · u³⌋, so `bt_0000` sends ≈ 10 % of all mail (1 M of 10 M),
 *             the median tenant ≈ 0.13 %; each tenant has 1–3 sending domains of its own.
 *   time      uniform over the `days` days before now, 15-minute UTC buckets.
 *   outcome   2 % failed, 3 % bounced, 90 % delivered (4 % deferred first), the rest sent only; of
 *             the delivered, 35 % opened by a person, a quarter of those clicked, 0.1 % complained.
 *   template  20 % none, else one of 30 (skewed to the first); project 60 % none, else one of 5;
 *             campaign 70 % none, else one of 50; tags: none 30 %, one 45 %, two 20 %, three 5 %
 *             of a pool of 10.
 *   provider  gmail 35, google_workspace 12, outlook 12, microsoft_365 12, yahoo 8, icloud 7, gmx 2,
 *             proton, zoho, yandex, mailru, qq 1 each, other 7 (%).
 *   client    of opened mail: Apple Mail 40, Gmail 30, Outlook 15, Chrome 8, Yahoo Mail 3,
 *             Thunderbird 2, Firefox 2 (%); device mobile 55, desktop 40, tablet 5.
 *   bounce    unknown_user 45, spam_block 15, mailbox_full 10, policy 10, other 10, dns 5,
 *             reputation 5 (%). Delivery seconds 1–600, most under a minute.
 *
 * Then per dimension, `GET /analytics/breakdown?by=<dim>&days=90` through the real api app
 * (`createApiApp` with a read-model feed, listening on 127.0.0.1, requests over keep-alive `fetch`:
 * the `npm start` configuration on embedded chDB), and the same aggregate in SQL on the Postgres
 * table, for the largest tenant and the median one. The Postgres answers are checked equal to the
 * api's (`answersEqual`).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { BREAKDOWN_COUNTERS, DIMENSION_COLUMNS, DIMENSIONS, type Dimension } from '@tern/read-models';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Figure } from './report.js';
import { distribution, round, timeMany } from './stats.js';

export interface BreakdownScaleOptions {
  ch: ClickHouseClient;
  /** A fresh migrated database's pool (the api reads its tenants' settings there). */
  pool: pg.Pool;
  databaseUrl: string;
  emails: number;
  tenants: number;
  days: number;
  /** Requests per dimension and tenant through the api. */
  requests: number;
  /** Statements per dimension and tenant on Postgres. */
  pgRequests: number;
}

const DIMS = DIMENSIONS;
type Dim = Dimension;
const COLUMN = DIMENSION_COLUMNS;
const COUNTERS = BREAKDOWN_COUNTERS;
const COLUMNS = [
  'tenant_id',
  'bucket',
  'template_id',
  'project_id',
  'campaign_id',
  'sending_domain',
  'mailbox_provider',
  'tags',
  'client_family',
  'device_type',
  'bounce_category',
  'delivery_seconds',
  ...COUNTERS,
];

const pick = (u: string, entries: [string, number][]) => {
  let acc = 0;
  const arms = entries.map(([value, pct]) => {
    acc += pct;
    return `${u} < ${acc}, '${value}'`;
  });
  return `multiIf(${arms.join(', ')}, '${entries.at(-1)![0]}')`;
};

/**
 * The fill: one row per email (its merged contribution). Seven hashes of the row number per row,
 * not one per column: each draw is 4 decimal digits of one of them (four per 64-bit hash; `d`:
 * 0…9999, `u`: 0 ≤ u < 100 in steps of 0.01), the bucket the seventh hash.
 */
export function fillSql(o: { emails: number; tenants: number; days: number; nowSeconds: number }): string {
  const d = (k: number) => `(intDiv(h${Math.floor(k / 4) + 1}, ${10_000 ** (k % 4)}) % 10000)`;
  const u = (k: number) => `(${d(k)} / 100.0)`;
  const tags = `['welcome','receipt','digest','reset','billing','alert','promo','survey','invite','report']`;
  const tag = (k: number) => `${tags}[${d(k)} % 10 + 1]`;
  const hashes = Array.from({ length: 7 }, (_, i) => `sipHash64(number, ${i + 1}) AS h${i + 1}`).join(', ');
  return `
    INSERT INTO email_dims_v1 (${COLUMNS.join(', ')})
    SELECT tenant_id, bucket, template_id, project_id, campaign_id, sending_domain, mailbox_provider, tags,
           if(opened, client, ''), if(opened, device, ''), if(outcome = 'bounced', bounce, ''),
           if(outcome = 'delivered', delivery, 0),
           1, outcome IN ('delivered', 'sent'), outcome = 'delivered', opened, clicked, outcome = 'bounced',
           outcome = 'delivered' AND ${d(19)} < 10, outcome = 'failed', outcome = 'delivered' AND ${u(20)} < 4
      FROM (
        SELECT toUInt32(floor(${o.tenants} * pow(${d(0)} / 10000.0, 3))) AS t,
               concat('bt_', leftPad(toString(t), 4, '0')) AS tenant_id,
               toStartOfFifteenMinutes(toDateTime(${o.nowSeconds} - h7 % ${o.days * 86_400}, 'UTC')) AS bucket,
               if(${u(1)} < 20, '', concat('tpl_', toString(toUInt32(floor(30 * pow(${d(2)} / 10000.0, 2)))))) AS template_id,
               if(${u(3)} < 60, '', concat('proj_', toString(${d(4)} % 5))) AS project_id,
               if(${u(5)} < 70, '', concat('camp_', toString(${d(6)} % 50))) AS campaign_id,
               concat('mail', toString(${d(7)} % (1 + t % 3)), '.t', toString(t), '.example') AS sending_domain,
               ${pick(u(8), [
                 ['gmail', 35],
                 ['google_workspace', 12],
                 ['outlook', 12],
                 ['microsoft_365', 12],
                 ['yahoo', 8],
                 ['icloud', 7],
                 ['gmx', 2],
                 ['proton', 1],
                 ['zoho', 1],
                 ['yandex', 1],
                 ['mailru', 1],
                 ['qq', 1],
                 ['other', 7],
               ])} AS mailbox_provider,
               multiIf(${u(9)} < 30, CAST([] AS Array(String)), ${u(9)} < 75, [${tag(10)}],
                       ${u(9)} < 95, arraySort(arrayDistinct([${tag(10)}, ${tag(11)}])),
                       arraySort(arrayDistinct([${tag(10)}, ${tag(11)}, ${tag(12)}]))) AS tags,
               ${pick(u(13), [
                 ['failed', 2],
                 ['bounced', 3],
                 ['delivered', 90],
                 ['sent', 5],
               ])} AS outcome,
               outcome = 'delivered' AND ${u(14)} < 35 AS opened,
               opened AND ${u(15)} < 25 AS clicked,
               ${pick(u(16), [
                 ['Apple Mail', 40],
                 ['Gmail', 30],
                 ['Outlook', 15],
                 ['Chrome', 8],
                 ['Yahoo Mail', 3],
                 ['Thunderbird', 2],
                 ['Firefox', 2],
               ])} AS client,
               ${pick(u(17), [
                 ['mobile', 55],
                 ['desktop', 40],
                 ['tablet', 5],
               ])} AS device,
               ${pick(u(18), [
                 ['unknown_user', 45],
                 ['spam_block', 15],
                 ['mailbox_full', 10],
                 ['policy', 10],
                 ['other', 10],
                 ['dns', 5],
                 ['reputation', 5],
               ])} AS bounce,
               toUInt32(1 + floor(599 * pow(${d(21)} / 10000.0, 4))) AS delivery,
               h1, h2, h3, h4, h5, h6
          FROM (SELECT ${hashes} FROM numbers(${o.emails})))`;
}

const PG_TABLE = 'bench_email_dims';

/** The Postgres copy: same columns, counters as bigint, tags text[]. */
const PG_DDL = `
  CREATE UNLOGGED TABLE ${PG_TABLE} (
    tenant_id text NOT NULL, bucket timestamptz NOT NULL, template_id text NOT NULL, project_id text NOT NULL,
    campaign_id text NOT NULL, sending_domain text NOT NULL, mailbox_provider text NOT NULL, tags text[] NOT NULL,
    client_family text NOT NULL, device_type text NOT NULL, bounce_category text NOT NULL,
    delivery_seconds integer NOT NULL,
    ${COUNTERS.map((c) => `${c} bigint NOT NULL`).join(', ')})`;

/** chDB → CSV in slices of tenants → `COPY … FROM STDIN`; then the index and `VACUUM ANALYZE`. */
async function copyToPostgres(ch: ClickHouseClient, databaseUrl: string, tenants: number): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let rows = 0;
  try {
    await client.query(`SET TIME ZONE 'UTC'`);
    await client.query(`DROP TABLE IF EXISTS ${PG_TABLE}`);
    await client.query(PG_DDL);
    const slice = Math.max(1, Math.ceil(tenants / 40));
    const select = COLUMNS.map((c) =>
      c === 'tags'
        ? `concat('{', arrayStringConcat(tags, ','), '}')`
        : c === 'bucket'
          ? `toString(bucket)`
          : c,
    ).join(', ');
    for (let first = 0; first < tenants; first += slice) {
      const lo = `bt_${String(first).padStart(4, '0')}`;
      const hi = `bt_${String(first + slice).padStart(4, '0')}`;
      const rs = await ch.query({
        query: `SELECT ${select} FROM email_dims_v1 WHERE tenant_id >= '${lo}' AND tenant_id < '${hi}'`,
        format: 'CSV',
      });
      const csv = await rs.text();
      const stream = client.query(
        copyFrom(`COPY ${PG_TABLE} (${COLUMNS.join(', ')}) FROM STDIN (FORMAT csv)`),
      );
      await new Promise<void>((resolve, reject) => {
        stream.on('finish', resolve);
        stream.on('error', reject);
        stream.end(csv);
      });
      rows += Number((stream as unknown as { rowCount: number }).rowCount ?? 0);
    }
    await client.query(`CREATE INDEX ON ${PG_TABLE} (tenant_id, bucket)`);
    await client.query(`VACUUM ANALYZE ${PG_TABLE}`);
  } finally {
    await client.end();
  }
  return rows;
}

/** The breakdown aggregate of `breakdown-queries.ts`, in Postgres SQL over the copy. */
function pgBreakdownSql(by: Dim): string {
  const from =
    by === 'tag'
      ? `${PG_TABLE} AS d CROSS JOIN LATERAL unnest(CASE WHEN cardinality(d.tags) = 0 THEN ARRAY[''] ELSE d.tags END) AS tag_key`
      : `${PG_TABLE} AS d`;
  const key = by === 'tag' ? 'tag_key' : `d.${COLUMN[by]}`;
  return `SELECT ${key} AS key, ${COUNTERS.map((c) => `sum(d.${c})::bigint AS ${c}`).join(', ')}
            FROM ${from}
           WHERE d.tenant_id = $1 AND d.bucket >= $2::date - interval '1 day' AND d.bucket < $3::date + interval '2 day'
             AND (d.bucket AT TIME ZONE 'UTC')::date BETWEEN $2::date AND $3::date
           GROUP BY 1 HAVING ${COUNTERS.map((c) => `sum(d.${c}) <> 0`).join(' OR ')}
           ORDER BY total DESC, key ASC LIMIT 100`;
}

type Counted = Record<string, number> & { key: string };
const signature = (rows: readonly Counted[]) =>
  JSON.stringify(rows.map((r) => [r.key, ...COUNTERS.map((c) => Number(r[c]))]));

export async function breakdownAtScale(
  o: BreakdownScaleOptions,
): Promise<{ figures: Figure[]; details: Record<string, unknown> }> {
  const { ch } = o;
  const nowSeconds = Math.floor(Date.now() / 1000);
  await ch.command({ query: 'TRUNCATE TABLE email_dims_v1' });
  await ch.command({ query: 'TRUNCATE TABLE email_dims_v1_tags' });
  let t = performance.now();
  await ch.command({ query: fillSql({ emails: o.emails, tenants: o.tenants, days: o.days, nowSeconds }) });
  const chFillMs = performance.now() - t;
  // The tag companion (ClickHouse migration 0033): what the projector's ships write with each
  // batch, here copied from the filled rows as the migration copies an existing table.
  t = performance.now();
  await ch.command({
    query: `INSERT INTO email_dims_v1_tags (tag, ${COLUMNS.join(', ')})
            SELECT tag, ${COLUMNS.join(', ')} FROM email_dims_v1 ARRAY JOIN arrayDistinct(tags) AS tag`,
  });
  const tagsFillMs = performance.now() - t;
  const [stats] = await (
    await ch.query({
      query: `SELECT count() AS rows, sum(total) AS emails, uniqExact(tenant_id) AS tenants,
                     (SELECT sum(data_compressed_bytes) FROM system.parts WHERE table = 'email_dims_v1' AND active) AS bytes
                FROM email_dims_v1`,
      format: 'JSONEachRow',
    })
  ).json<Record<string, string>>();
  const perTenant = await (
    await ch.query({
      query: `SELECT tenant_id, sum(total) AS n FROM email_dims_v1 GROUP BY tenant_id ORDER BY n DESC, tenant_id`,
      format: 'JSONEachRow',
    })
  ).json<{ tenant_id: string; n: string }>();
  const largest = perTenant[0]!;
  const median = perTenant[Math.floor(perTenant.length / 2)]!;
  console.error(
    `[analytics] breakdown: chDB filled in ${Math.round(chFillMs)} ms (the tag companion ${Math.round(tagsFillMs)} ms): ${JSON.stringify(stats)}; largest ${largest.tenant_id} ${largest.n} emails, median ${median.tenant_id} ${median.n}`,
  );
  t = performance.now();
  const pgRows = await copyToPostgres(ch, o.databaseUrl, o.tenants);
  const pgFillMs = performance.now() - t;
  console.error(
    `[analytics] breakdown: Postgres COPY + index + VACUUM ANALYZE of ${pgRows} rows in ${Math.round(pgFillMs)} ms`,
  );

  const { startReadApi } = await import('./read-api.js');
  const figures: Figure[] = [];
  const details: Record<string, unknown> = {
    emails: o.emails,
    tenants: o.tenants,
    days: o.days,
    chFillMs: Math.round(chFillMs),
    pgFillMs: Math.round(pgFillMs),
    pgRows,
    table: stats,
    requests: o.requests,
    pgRequests: o.pgRequests,
  };
  const today = new Date(nowSeconds * 1000).toISOString().slice(0, 10);
  const fromDay = new Date((nowSeconds - (o.days - 1) * 86_400) * 1000).toISOString().slice(0, 10);
  const { createBreakdownQueries } = await import('@tern/read-models');
  const queries = createBreakdownQueries(ch);
  const pgPool = new pg.Pool({ connectionString: o.databaseUrl, max: 2 });
  pgPool.on('error', () => {});
  for (const [label, tenant] of [
    ['largest tenant', largest],
    ['median tenant', median],
  ] as const) {
    const api = await startReadApi({ pool: o.pool, ch, tenantId: tenant.tenant_id, retentionDays: o.days });
    const perTenantDetails: Record<string, unknown> = {
      tenantId: tenant.tenant_id,
      emails: Number(tenant.n),
    };
    try {
      const variant = `breakdown ${o.emails / 1e6}M emails / ${o.tenants} tenants: ${label} (${Number(tenant.n).toLocaleString('en-US')} emails)`;
      const get = async (path: string) => {
        const res = await fetch(`${api.url}${path}`, { headers: api.headers });
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
        return body;
      };
      const paths: [string, string, Dim | null][] = [
        ...DIMS.map((d): [string, string, Dim] => [d, `/analytics/breakdown?by=${d}&days=${o.days}`, d]),
        [
          'provider, filtered, daily series',
          `/analytics/breakdown?by=provider&days=${o.days}&tag=receipt&device=mobile&interval=day`,
          null,
        ],
        ['deliverability', `/analytics/deliverability?days=${o.days}`, null],
      ];
      for (const [name, path, dim] of paths) {
        const apiSample = await timeMany(o.requests, () => get(path), 2);
        const a = distribution(apiSample);
        const entry: Record<string, unknown> = { apiP50: round(a.p50, 1), apiP95: round(a.p95, 1) };
        figures.push({
          bench: 'analytics',
          variant,
          metric: `${name}: api p95`,
          value: a.p95,
          unit: 'ms',
          target: { op: '<=', value: 100 },
        });
        if (dim !== null) {
          const sql = pgBreakdownSql(dim);
          const params = [tenant.tenant_id, fromDay, today];
          const pgSample = await timeMany(o.pgRequests, () => pgPool.query(sql, params), 1);
          const p = distribution(pgSample);
          // The read-models query alone (no HTTP, no route): chDB's share of the api's time.
          const chSample = await timeMany(
            Math.ceil(o.requests / 2),
            () =>
              queries.breakdown({
                tenantId: tenant.tenant_id,
                fromDay,
                toDay: today,
                timeZone: 'UTC',
                by: dim,
                filters: {},
              }),
            2,
          );
          entry.chdbAloneP50 = round(distribution(chSample).p50, 1);
          const apiRows = (JSON.parse(await get(path)) as { data: Counted[] }).data;
          const pgAnswer = (await pgPool.query<Counted>(sql, params)).rows;
          const equal = signature(apiRows) === signature(pgAnswer);
          Object.assign(entry, {
            pgP50: round(p.p50, 1),
            pgP95: round(p.p95, 1),
            answersEqual: equal,
            keys: apiRows.length,
          });
          figures.push(
            { bench: 'analytics', variant, metric: `${name}: api p50`, value: a.p50, unit: 'ms' },
            {
              bench: 'analytics',
              variant,
              metric: `${name}: chDB query alone p50`,
              value: entry.chdbAloneP50 as number,
              unit: 'ms',
            },
            { bench: 'analytics', variant, metric: `${name}: Postgres p50`, value: p.p50, unit: 'ms' },
            {
              bench: 'analytics',
              variant,
              metric: `${name}: Postgres p50 / api p50`,
              value: p.p50 / a.p50,
              unit: '×',
              target: { op: '>=', value: 10 },
              ...(equal ? {} : { note: 'answers differ' }),
            },
          );
        }
        perTenantDetails[name] = entry;
        console.error(`[analytics] breakdown ${label} ${name}: ${JSON.stringify(entry)}`);
      }
    } finally {
      await api.close();
    }
    details[label] = perTenantDetails;
  }
  await pgPool.end();
  return { figures, details };
}
