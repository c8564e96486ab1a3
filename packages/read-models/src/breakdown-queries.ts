import type { ClickHouseClient } from '@clickhouse/client';
import { DIM_COUNTER_NAMES, type DimCounters } from '@tern/domain';
import { z } from 'zod';
import { DIMS_VIEW } from './daily-analytics.js';
import { createDimTagsCheck, DIM_TAGS_VIEW } from './dim-tags.js';

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

/** The zone's offset name at an instant ("GMT", "GMT+05:30"); every answer null for an unknown zone. */
function offsetNames(timeZone: string): (ms: number) => string | null {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  } catch {
    return () => null;
  }
  return (ms) => format.formatToParts(ms).find((part) => part.type === 'timeZoneName')?.value ?? '';
}

/**
 * Whether `timeZone` is a whole number of hours off UTC from the day before `fromDay` to the day
 * after `toDay` (every offset it takes there holds at least 12 hours, so two samples a day see
 * each). Then each local day and hour of the range is a sum of whole UTC hours, and the hourly
 * projections of the rollup (ClickHouse migration 0032) can answer; +05:30 or +05:45 cannot.
 * An unknown zone answers false (the 15-minute rows answer, or ClickHouse refuses the zone).
 */
export function wholeHourZone(timeZone: string, fromDay: string, toDay: string): boolean {
  const memoKey = `${timeZone}\u0000${fromDay}\u0000${toDay}`;
  const known = wholeHourMemo.get(memoKey);
  if (known !== undefined) return known;
  let answer = true;
  const offsetAt = offsetNames(timeZone);
  const first = Date.parse(`${fromDay}T00:00:00Z`) - 86_400_000;
  const last = Date.parse(`${toDay}T00:00:00Z`) + 2 * 86_400_000;
  for (let at = first; at <= last && answer; at += 43_200_000) {
    const name = offsetAt(at);
    // "GMT", "GMT+02:00", "GMT-05:00", "GMT+05:30"; null: an unknown zone
    answer = name !== null && (name === 'GMT' || /^GMT[+-]\d{2}:00$/.test(name));
  }
  if (wholeHourMemo.size >= 1000) wholeHourMemo.clear();
  wholeHourMemo.set(memoKey, answer);
  return answer;
}
const wholeHourMemo = new Map<string, boolean>();

/**
 * The WHERE of a range and filters, with its parameters (every value is a bound parameter), and
 * the time column the query groups by: `toStartOfHour(d.bucket)` in a whole-hour zone (what the
 * hourly projections hold: ClickHouse reads them when no filter names another column), else the
 * 15-minute `d.bucket`. Both give the same answer in such a zone. `tagRows`: the rows are the tag
 * companion's (`email_dim_tags`, keyed by tag), whose `tag` column a tag filter compares.
 */
function whereOf(p: z.output<typeof breakdownParams>, hourly: boolean, tagRows = false) {
  const params: Record<string, unknown> = {
    tenantId: p.tenantId,
    fromDay: p.fromDay,
    toDay: p.toDay,
    tz: p.timeZone,
  };
  const time = hourly ? 'toStartOfHour(d.bucket)' : 'd.bucket';
  // The bounds (a day on either side covers any offset) let the primary key prune; the local day
  // decides.
  const parts = [
    'd.tenant_id = {tenantId:String}',
    `${time} >= toDateTime({fromDay:Date}, 'UTC') - INTERVAL 1 DAY`,
    `${time} < toDateTime({toDay:Date}, 'UTC') + INTERVAL 2 DAY`,
    `toDate(${time}, {tz:String}) BETWEEN {fromDay:Date} AND {toDay:Date}`,
  ];
  for (const [dim, value] of Object.entries(p.filters) as [Dimension, string | undefined][]) {
    if (value === undefined) continue;
    params[`f_${dim}`] = value;
    parts.push(
      dim !== 'tag'
        ? `d.${DIMENSION_COLUMNS[dim]} = {f_${dim}:String}`
        : tagRows
          ? 'd.tag = {f_tag:String}'
          : 'has(d.tags, {f_tag:String})',
    );
  }
  return { where: parts.join(' AND '), params, time, from: tagRows ? DIM_TAGS_VIEW : DIMS_VIEW };
}

/** Whether a query of `p` reads the tag companion: under a tag filter, when it serves. */
const readsTagRows = (p: z.output<typeof breakdownParams>, served: boolean) =>
  served && p.filters.tag !== undefined;

/**
 * The SQL of a breakdown: its `rows` (the top keys by total); each key's `series` points (`keys`
 * only); or `both` in one scan, the rows first (`start` 0) then the top keys' points. A tag
 * breakdown counts an email once per tag ('' without): it sums per tag set first (what the
 * `by_hour_tag` projection holds), then spreads each set over its tags.
 */
export function breakdownSql(
  p: z.output<typeof breakdownParams>,
  part: 'rows' | 'series' | 'both',
  hourly = wholeHourZone(p.timeZone, p.fromDay, p.toDay),
  tagRows = false,
) {
  const { where, params, time, from } = whereOf(p, hourly, readsTagRows(p, tagRows));
  const startOf = (t: string) =>
    `toUnixTimestamp(${p.interval === 'hour' ? 'toStartOfHour' : 'toStartOfDay'}(${t}, {tz:String})) AS start`;
  const timed = part !== 'rows';
  const source =
    p.by === 'tag'
      ? {
          key: 'tag_key',
          start: startOf('x.t'),
          sums: BREAKDOWN_COUNTERS.map((c) => `sum(x.${c}) AS ${c}`).join(', '),
          from: `(SELECT d.tags AS tags${timed ? `, ${time} AS t` : ''}, ${SUMS} FROM ${from} AS d
                   WHERE ${where} GROUP BY tags${timed ? ', t' : ''}) AS x LEFT ARRAY JOIN x.tags AS tag_key`,
          where: 'true',
        }
      : {
          key: `d.${DIMENSION_COLUMNS[p.by]}`,
          start: startOf(time),
          sums: SUMS,
          from: `${from} AS d`,
          where,
        };
  const select = (extra: string) =>
    `SELECT ${source.key} AS key${extra}, ${source.sums} FROM ${source.from} WHERE ${source.where}`;
  if (part === 'rows')
    return {
      params,
      query: `${select('')} GROUP BY key HAVING ${NONZERO} ORDER BY total DESC, key ASC LIMIT {limit:UInt32}`,
    };
  if (part === 'series')
    return {
      params,
      query: `${select(`, ${source.start}`)} AND key IN {keys:Array(String)}
        GROUP BY key, start HAVING ${NONZERO} ORDER BY key, start`,
    };
  // One scan for both (GROUPING SETS; ClickHouse then reads no projection, so this is for the
  // queries that cannot use one): the per-key row has start 0; the keys are ranked by total over
  // those rows and the points of the first `limit` keys kept.
  const columns = `key, start, ${BREAKDOWN_COUNTERS.join(', ')}`;
  return {
    params,
    query: `SELECT ${columns} FROM (
        SELECT ${columns}, dense_rank() OVER (ORDER BY key_total DESC, key ASC) AS key_rank FROM (
          SELECT ${columns}, max(if(start = 0, total, 0)) OVER (PARTITION BY key) AS key_total FROM (
            ${select(`, ${source.start}`)} GROUP BY GROUPING SETS ((key), (key, start)) HAVING ${NONZERO})))
      WHERE key_rank <= {limit:UInt32}
      ORDER BY start != 0, if(start = 0, total, 0) DESC, key ASC, start ASC`,
  };
}

const unfiltered = (p: z.output<typeof breakdownParams>) =>
  Object.values(p.filters).every((v) => v === undefined);

/** The sums of deliverability per (provider, delivery seconds), from `source` rows `d` under `where`. */
const deliveryRows = (source: string, where: string) =>
  `SELECT d.mailbox_provider AS provider, d.delivery_seconds AS seconds, sum(d.total) AS t, sum(d.sent) AS s,
          sum(d.delivered) AS dl, sum(d.bounced) AS b, sum(d.complained) AS c, sum(d.delayed) AS dy
     FROM ${source} AS d WHERE ${where} GROUP BY provider, seconds`;

// The asked local range as UTC instants: [RANGE_START, RANGE_END), and the UTC days wholly inside
// it, [WHOLE_DAYS_FROM, WHOLE_DAYS_TO) (empty when the range lies within one UTC day).
const RANGE_START = 'toDateTime({fromDay:Date}, {tz:String})';
const RANGE_END = 'toDateTime({toDay:Date} + INTERVAL 1 DAY, {tz:String})';
const WHOLE_DAYS_FROM = `toStartOfDay(addSeconds(${RANGE_START}, 86399), 'UTC')`;
const WHOLE_DAYS_TO = `toStartOfDay(${RANGE_END}, 'UTC')`;

/** Whether the local days from `fromDay` to `toDay` in `timeZone` are UTC days (UTC, or GMT in winter). */
function utcDays(timeZone: string, fromDay: string, toDay: string): boolean {
  const offsetAt = offsetNames(timeZone);
  return (
    offsetAt(Date.parse(`${fromDay}T00:00:00Z`)) === 'GMT' &&
    offsetAt(Date.parse(`${toDay}T00:00:00Z`) + 86_400_000) === 'GMT'
  );
}

/**
 * The SQL of deliverability: per provider the counts and the exact sent→delivered median and p95,
 * weighted by delivered emails, over the (provider, seconds) sums. Unfiltered with projections,
 * the UTC days wholly inside the range are read from the daily projection `by_day_provider_seconds`
 * (ClickHouse migration 0034) and the hours at its ends (in any zone off UTC, +05:30 too) from the
 * 15-minute rows: the same sums as reading every row of the range. In UTC there are no such hours,
 * and the projection alone answers.
 */
export function deliverabilitySql(
  p: z.output<typeof breakdownParams>,
  hourly: boolean,
  tagRows = false,
  projections = true,
) {
  const { where, params, from } = whereOf(p, hourly, readsTagRows(p, tagRows));
  const tenant = 'd.tenant_id = {tenantId:String}';
  const wholeDays = deliveryRows(
    DIMS_VIEW,
    `${tenant} AND toStartOfDay(d.bucket) >= ${WHOLE_DAYS_FROM} AND toStartOfDay(d.bucket) < ${WHOLE_DAYS_TO}`,
  );
  const sums = !(projections && unfiltered(p))
    ? deliveryRows(from, where)
    : utcDays(p.timeZone, p.fromDay, p.toDay)
      ? wholeDays
      : `SELECT provider, seconds, sum(t) AS t, sum(s) AS s, sum(dl) AS dl, sum(b) AS b, sum(c) AS c, sum(dy) AS dy
           FROM (${wholeDays}
                 UNION ALL
                 ${deliveryRows(
                   DIMS_VIEW,
                   `${tenant} AND ((d.bucket >= ${RANGE_START} AND d.bucket < least(${WHOLE_DAYS_FROM}, ${RANGE_END}))
                      OR (d.bucket >= greatest(${WHOLE_DAYS_FROM}, ${WHOLE_DAYS_TO}) AND d.bucket < ${RANGE_END}))`,
                 )})
          GROUP BY provider, seconds`;
  return {
    params,
    query: `SELECT provider, sum(t) AS total, sum(s) AS sent, sum(dl) AS delivered,
                sum(b) AS bounced, sum(c) AS complained, sum(dy) AS delayed,
                if(sum(dl) > 0, quantileExactWeightedIf(0.5)(seconds, toUInt64(greatest(dl, 0)), dl > 0), NULL) AS median_seconds,
                if(sum(dl) > 0, quantileExactWeightedIf(0.95)(seconds, toUInt64(greatest(dl, 0)), dl > 0), NULL) AS p95_seconds
           FROM (${sums})
          GROUP BY provider HAVING total != 0 OR sent != 0 ORDER BY total DESC, provider ASC`,
  };
}

export interface BreakdownQueries {
  /** Keys with a non-zero figure, by total desc then key; `series` per key when an interval is asked. */
  breakdown(params: BreakdownParams): Promise<{ rows: BreakdownRow[]; series: SeriesPoint[] }>;
  /** Per mailbox provider over the range: counts and the sent→delivered median and p95. */
  deliverability(params: Omit<BreakdownParams, 'by' | 'interval'>): Promise<DeliverabilityRow[]>;
}

export interface BreakdownQueryOptions {
  /**
   * Group by UTC hours in whole-hour zones, so that ClickHouse may answer from the hourly
   * projections (default). `false` reads the 15-minute rows always: the same answers, slower
   * (what the tests compare against).
   */
  projections?: boolean;
  /**
   * Read a tag filter from the tag companion (`email_dim_tags`, dim-tags.ts) when it serves the
   * version `email_dims` serves (default). `false` tests every row's tags in `email_dims`: the
   * same answers, slower (what the tests compare against).
   */
  tagRows?: boolean;
}

export function createBreakdownQueries(
  ch: ClickHouseClient,
  { projections = true, tagRows = true }: BreakdownQueryOptions = {},
): BreakdownQueries {
  const hourlyFor = (p: z.output<typeof breakdownParams>) =>
    projections && wholeHourZone(p.timeZone, p.fromDay, p.toDay);
  const tagsServed = createDimTagsCheck(ch);
  /** Whether `p`'s query may read the tag companion: asked of ClickHouse only under a tag filter. */
  const tagRowsFor = async (p: z.output<typeof breakdownParams>) =>
    tagRows && p.filters.tag !== undefined && (await tagsServed());
  async function rows<T extends z.ZodType>(schema: T, query: string, params: Record<string, unknown>) {
    const result = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
    return z.array(schema).parse(await result.json()) as z.infer<T>[];
  }
  return {
    async breakdown(input) {
      const p = breakdownParams.parse(input);
      const hourly = hourlyFor(p);
      const byTag = await tagRowsFor(p);
      if (p.interval !== undefined && !(hourly && unfiltered(p))) {
        // No projection answers: rows and points in one scan of the 15-minute rows.
        const both = breakdownSql(p, 'both', hourly, byTag);
        const all = await rows(seriesRow, both.query, { ...both.params, limit: p.limit });
        const series = all.filter((r) => r.start !== 0);
        return { rows: all.filter((r) => r.start === 0).map(({ start: _, ...row }) => row), series };
      }
      const top = breakdownSql(p, 'rows', hourly, byTag);
      const found = await rows(breakdownRow, top.query, { ...top.params, limit: p.limit });
      if (p.interval === undefined || found.length === 0) return { rows: found, series: [] };
      const points = breakdownSql(p, 'series', hourly, byTag);
      const series = await rows(seriesRow, points.query, { ...points.params, keys: found.map((r) => r.key) });
      return { rows: found, series };
    },
    async deliverability(input) {
      const p = breakdownParams.parse({ ...input, by: 'provider' });
      const { query, params } = deliverabilitySql(p, hourlyFor(p), await tagRowsFor(p), projections);
      return rows(deliverabilityRow, query, params);
    },
  };
}
