import type { ClickHouseClient } from '@clickhouse/client';
import { z } from 'zod';
import { DAILY_TABLE, MACHINE_DAILY_TABLE, PROJECT_DAILY_TABLE } from './daily-analytics.js';

/**
 * The analytics routes' reads of the daily rollups (their owner, `daily-analytics.ts`, writes them):
 * typed ClickHouse queries over `email_daily_v2` (zod in, zod out). The table holds signed
 * deltas summed by merges per (tenant, day, template); merges are never awaited, so every query
 * re-aggregates with `sum()`; a row count would mean nothing.
 */

/** Int64 sums arrive as strings over HTTP (`output_format_json_quote_64bit_integers`), as numbers from chDB. */
const int64 = z
  .union([z.string(), z.number()])
  .transform(Number)
  .pipe(z.number().int().refine(Number.isSafeInteger, 'not a safe integer'));

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);

export const dayRangeParams = z.object({
  tenantId: z.string().min(1),
  /** First and last UTC day, inclusive (`YYYY-MM-DD`). */
  fromDay: day,
  toDay: day,
  /** Narrow to one project (SPEC §16): read from `email_project_daily_v1` instead. */
  projectId: z.string().min(1).optional(),
});
export type DayRangeParams = z.infer<typeof dayRangeParams>;

const totalsRow = z.object({
  total: int64,
  sent: int64,
  opened: int64,
  clicked: int64,
  bounced: int64,
  complained: int64,
  failed: int64,
  machineOpened: int64,
});
export type TotalsRow = z.infer<typeof totalsRow>;

const dailyRow = z.object({ day, sent: int64, opened: int64, clicked: int64, bounced: int64 });
export type DailyRow = z.infer<typeof dailyRow>;

const templateRow = z.object({ template_id: z.string().min(1), sent: int64, opened: int64, clicked: int64 });
export type TemplateRow = z.infer<typeof templateRow>;

// Columns are qualified (`d.`): the result aliases reuse their names, and an unqualified name
// could resolve to the alias instead of the column on older ClickHouse analyzers.
const WHERE = `d.tenant_id = {tenantId:String} AND d.day >= {fromDay:Date} AND d.day <= {toDay:Date}`;

/** The rollup to read and its filter: every email, or one project's (same counters, same sums). */
const source = (p: DayRangeParams) =>
  p.projectId === undefined
    ? { from: `${DAILY_TABLE} AS d`, where: WHERE }
    : { from: `${PROJECT_DAILY_TABLE} AS d`, where: `${WHERE} AND d.project_id = {projectId:String}` };

export interface AnalyticsQueries {
  totals(params: DayRangeParams): Promise<TotalsRow>;
  /** Days with data only, oldest first; the caller zero-fills. */
  daily(params: DayRangeParams): Promise<DailyRow[]>;
  /** Templates with at least one email in the range, by sent desc then id asc (byte order). */
  topTemplates(params: DayRangeParams & { limit: number }): Promise<TemplateRow[]>;
}

export function createAnalyticsQueries(ch: ClickHouseClient): AnalyticsQueries {
  async function rows<T extends z.ZodType>(
    schema: T,
    query: string,
    params: Record<string, unknown>,
  ): Promise<z.infer<T>[]> {
    const result = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
    return z.array(schema).parse(await result.json());
  }

  return {
    async totals(params) {
      const p = dayRangeParams.parse(params);
      const { from, where } = source(p);
      // Machine opens (SPEC §21) from their own rollup, every project's unless narrowed to one.
      const machineWhere = `${WHERE}${p.projectId === undefined ? '' : ' AND d.project_id = {projectId:String}'}`;
      const [row] = await rows(
        totalsRow,
        `SELECT sum(d.total) AS total, sum(d.sent) AS sent, sum(d.opened) AS opened, sum(d.clicked) AS clicked,
                sum(d.bounced) AS bounced, sum(d.complained) AS complained, sum(d.failed) AS failed,
                (SELECT sum(d.machine_opened) FROM ${MACHINE_DAILY_TABLE} AS d WHERE ${machineWhere}) AS machineOpened
           FROM ${from}
          WHERE ${where}`,
        p,
      );
      // An aggregate without GROUP BY always yields one row (zeros when nothing matched).
      return (
        row ?? {
          total: 0,
          sent: 0,
          opened: 0,
          clicked: 0,
          bounced: 0,
          complained: 0,
          failed: 0,
          machineOpened: 0,
        }
      );
    },

    async daily(params) {
      const p = dayRangeParams.parse(params);
      const { from, where } = source(p);
      return rows(
        dailyRow,
        `SELECT toString(d.day) AS day, sum(d.sent) AS sent, sum(d.opened) AS opened, sum(d.clicked) AS clicked,
                sum(d.bounced) AS bounced
           FROM ${from}
          WHERE ${where}
          GROUP BY d.day
          ORDER BY day`,
        p,
      );
    },

    async topTemplates(params) {
      const p = dayRangeParams.extend({ limit: z.number().int().min(1).max(1000) }).parse(params);
      const { from, where } = source(p);
      // HAVING total > 0: deltas of a template can cancel out (an email moved to another
      // template by an earlier email.queued); such a template has no email in the cohort.
      return rows(
        templateRow,
        `SELECT d.template_id AS template_id, sum(d.sent) AS sent, sum(d.opened) AS opened, sum(d.clicked) AS clicked
           FROM ${from}
          WHERE ${where} AND d.template_id != ''
          GROUP BY d.template_id
         HAVING sum(d.total) > 0
          ORDER BY sent DESC, template_id ASC
          LIMIT {limit:UInt32}`,
        p,
      );
    },
  };
}
