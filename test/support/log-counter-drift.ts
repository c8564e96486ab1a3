import type pg from 'pg';

/**
 * Counter rows that differ from count(*): over every project (project_id '') and per project,
 * of the day counters and of the hour counters (migration 0042).
 */
const driftOf = async (pool: pg.Pool, table: string, bucket: string) =>
  (
    await pool.query<{
      tenant_id: string;
      project_id: string;
      at: string;
      status: string;
      counted: string;
      actual: string;
    }>(
      `WITH visible AS (
         SELECT tenant_id, project_id, ${bucket} AS at, status
           FROM email_logs WHERE created_at IS NOT NULL),
       actual AS (
         SELECT tenant_id, '' AS project_id, at, status, count(*) AS n FROM visible GROUP BY 1, 3, 4
         UNION ALL
         SELECT tenant_id, project_id, at, status, count(*) FROM visible
          WHERE project_id IS NOT NULL GROUP BY 1, 2, 3, 4),
       counted AS (SELECT tenant_id, project_id, ${table === 'email_log_counts' ? 'day' : 'hour'} AS at, status, n
                     FROM ${table} WHERE n <> 0)
       SELECT '${table}' AS table, coalesce(a.tenant_id, c.tenant_id) AS tenant_id,
              coalesce(a.project_id, c.project_id) AS project_id, coalesce(a.at, c.at)::text AS at,
              coalesce(a.status, c.status) AS status, c.n::text AS counted, a.n::text AS actual
         FROM actual a FULL JOIN counted c USING (tenant_id, project_id, at, status)
        WHERE a.n IS DISTINCT FROM c.n`,
    )
  ).rows;
/** Every counter row (day and hour) that differs from count(*) of the visible log entries: [] when none. */
export const logCounterDrift = async (pool: pg.Pool) => [
  ...(await driftOf(pool, 'email_log_counts', "(created_at AT TIME ZONE 'UTC')::date")),
  ...(await driftOf(
    pool,
    'email_log_hour_counts',
    "date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
  )),
];
