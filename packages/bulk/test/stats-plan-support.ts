// What the statement of `mailStats` (a campaign's counts) ran as: its plan, with what each node read.
import type pg from 'pg';
import { mailStats } from '../src/index.js';

export type PlanNode = {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
};

/** `EXPLAIN (ANALYZE)` of the counts' statement of `sources` on `db`: its text taken as `mailStats` sends it. */
export async function mailStatsPlan(db: pg.Pool, tenant: string, sources: string[]): Promise<PlanNode> {
  let text = '';
  let values: unknown[] = [];
  const recorder = {
    query: async (t: string, v: unknown[]) => {
      if (t.includes('bulk_emails b')) [text, values] = [t, v];
      return { rows: [] };
    },
  };
  await mailStats(recorder as never, tenant, sources);
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
    values,
  );
  return rows[0]!['QUERY PLAN'][0].Plan;
}
