import type { ClickHouseClient } from '@clickhouse/client';
import { DIM_COUNTER_NAMES, type DimCounters } from '@tern/domain';
import { z } from 'zod';
import { DIMS_VIEW } from './daily-analytics.js';

/**
 * The reads of the sliceable rollup (SPEC §26; its owner, `daily-analytics.ts`, writes it): a
 * breakdown by one dimension under any filters, with an hourly or daily series in the tenant's
 * time zone, and the deliverability per mailbox provider. Rows are signed deltas never merged
 * on read: every figure is a `sum()` (re-aggregation), so a row count means nothing.
 */

/** Dimension names of the API → their column (the tag is an array: one row per tag). */
export const DIMENSION_COLUMNS = {
  tag: 'tags',
  template: 'template_id',
  project: 'project_id',
  campaign: 'campaign_id',
  domain: 'sending_domain',
  provider: 'mailbox_provider',
  client: 'client_family',
  device: 'device_type',
  bounce: 'bounce_category',
} as const;
export type Dimension = keyof typeof DIMENSION_COLUMNS;
export const DIMENSIONS = Object.keys(DIMENSION_COLUMNS) as Dimension[];

/** The counters of a row: those the fold's dimension rows carry (`DIM_COUNTER_NAMES`), summed. */
export const BREAKDOWN_COUNTERS = DIM_COUNTER_NAMES;
export type BreakdownCounters = DimCounters;

const int64 = z
  .union([z.string(), z.number()])
  .transform(Number)
  .pipe(z.number().int().refine(Number.isSafeInteger, 'not a safe integer'));
const counters = z.object(
  Object.fromEntries(BREAKDOWN_COUNTERS.map((c) => [c, int64])) as Record<
    (typeof BREAKDOWN_COUNTERS)[number],
    typeof int64
  >,
);
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

export const breakdownParams = z.object({
  tenantId: z.string().min(1),
  /** First and last day in `timeZone`, inclusive. */
  fromDay: day,
  toDay: day,
  timeZone: z.string().min(1),
  by: z.enum(DIMENSIONS as [Dimension, ...Dimension[]]),
  filters: z.partialRecord(z.enum(DIMENSIONS as [Dimension, ...Dimension[]]), z.string()),
  interval: z.enum(['hour', 'day']).optional(),
  limit: z.number().int().min(1).max(1000).default(100),
});
export type BreakdownParams = z.input<typeof breakdownParams>;

export type BreakdownRow = BreakdownCounters & { key: string };
export type SeriesPoint = BreakdownCounters & { key: string; start: number };

const breakdownRow = counters.extend({ key: z.string() });
const seriesRow = counters.extend({ key: z.string(), start: int64 });

export const deliverabilityRow = z.object({
  provider: z.string(),
  total: int64,
  sent: int64,
  delivered: int64,
  bounced: int64,
  complained: int64,
  delayed: int64,
  median_seconds: z.union([z.number(), z.string()]).transform(Number).nullable(),
  p95_seconds: z.union([z.number(), z.string()]).transform(Number).nullable(),
});
export type DeliverabilityRow = z.infer<typeof deliverabilityRow>;

const SUMS = BREAKDOWN_COUNTERS.map((c) => `sum(d.${c}) AS ${c}`).join(', ');
const NONZERO = BREAKDOWN_COUNTERS.map((c) => `${c} != 0`).join(' OR ');

/** The WHERE of a range and filters, with its parameters (every value is a bound parameter). */
function whereOf(p: z.output<typeof breakdownParams>) {
  const params: Record<string, unknown> = {
    tenantId: p.tenantId,
    fromDay: p.fromDay,
    toDay: p.toDay,
    tz: p.timeZone,
  };
  // The bucket bounds (a day on either side covers any offset) let the primary key prune; the
  // local day decides.
  const parts = [
    'd.tenant_id = {tenantId:String}',
    `d.bucket >= toDateTime({fromDay:Date}, 'UTC') - INTERVAL 1 DAY`,
    `d.bucket < toDateTime({toDay:Date}, 'UTC') + INTERVAL 2 DAY`,
    'toDate(d.bucket, {tz:String}) BETWEEN {fromDay:Date} AND {toDay:Date}',
  ];
  for (const [dim, value] of Object.entries(p.filters) as [Dimension, string | undefined][]) {
    if (value === undefined) continue;
    params[`f_${dim}`] = value;
    parts.push(
      dim === 'tag' ? `has(d.tags, {f_tag:String})` : `d.${DIMENSION_COLUMNS[dim]} = {f_${dim}:String}`,
    );
  }
  return { where: parts.join(' AND '), params };
}

/** The FROM and key expression of a breakdown: a tag breakdown counts an email once per tag ('' without). */
const sourceOf = (by: Dimension) =>
  by === 'tag'
    ? { from: `${DIMS_VIEW} AS d LEFT ARRAY JOIN d.tags AS tag_key`, key: 'tag_key' }
    : { from: `${DIMS_VIEW} AS d`, key: `d.${DIMENSION_COLUMNS[by]}` };

export interface BreakdownQueries {
  /** Keys with a non-zero figure, by total desc then key; `series` per key when an interval is asked. */
  breakdown(params: BreakdownParams): Promise<{ rows: BreakdownRow[]; series: SeriesPoint[] }>;
  /** Per mailbox provider over the range: counts and the sent→delivered median and p95. */
  deliverability(params: Omit<BreakdownParams, 'by' | 'interval'>): Promise<DeliverabilityRow[]>;
}

export function createBreakdownQueries(ch: ClickHouseClient): BreakdownQueries {
  async function rows<T extends z.ZodType>(schema: T, query: string, params: Record<string, unknown>) {
    const result = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
    return z.array(schema).parse(await result.json()) as z.infer<T>[];
  }
  return {
    async breakdown(input) {
      const p = breakdownParams.parse(input);
      const { where, params } = whereOf(p);
      const { from, key } = sourceOf(p.by);
      const top = await rows(
        breakdownRow,
        `SELECT ${key} AS key, ${SUMS} FROM ${from} WHERE ${where}
          GROUP BY key HAVING ${NONZERO} ORDER BY total DESC, key ASC LIMIT {limit:UInt32}`,
        { ...params, limit: p.limit },
      );
      if (p.interval === undefined || top.length === 0) return { rows: top, series: [] };
      const start =
        p.interval === 'hour'
          ? 'toStartOfHour(d.bucket, {tz:String})'
          : 'toStartOfDay(d.bucket, {tz:String})';
      const series = await rows(
        seriesRow,
        `SELECT ${key} AS key, toUnixTimestamp(${start}) AS start, ${SUMS} FROM ${from}
          WHERE ${where} AND ${key} IN {keys:Array(String)}
          GROUP BY key, start HAVING ${NONZERO} ORDER BY key, start`,
        { ...params, keys: top.map((r) => r.key) },
      );
      return { rows: top, series };
    },
    async deliverability(input) {
      const p = breakdownParams.parse({ ...input, by: 'provider' });
      const { where, params } = whereOf(p);
      return rows(
        deliverabilityRow,
        `SELECT provider, sum(t) AS total, sum(s) AS sent, sum(dl) AS delivered,
                sum(b) AS bounced, sum(c) AS complained, sum(dy) AS delayed,
                if(sum(dl) > 0, quantileExactWeightedIf(0.5)(seconds, toUInt64(greatest(dl, 0)), dl > 0), NULL) AS median_seconds,
                if(sum(dl) > 0, quantileExactWeightedIf(0.95)(seconds, toUInt64(greatest(dl, 0)), dl > 0), NULL) AS p95_seconds
           FROM (SELECT d.mailbox_provider AS provider, d.delivery_seconds AS seconds, sum(d.total) AS t,
                        sum(d.sent) AS s, sum(d.delivered) AS dl, sum(d.bounced) AS b, sum(d.complained) AS c,
                        sum(d.delayed) AS dy
                   FROM ${DIMS_VIEW} AS d WHERE ${where} GROUP BY provider, seconds)
          GROUP BY provider HAVING total != 0 OR sent != 0 ORDER BY total DESC, provider ASC`,
        params,
      );
    },
  };
}
