/**
 * The read-path bench's data (issue 10): `entries` log entries of one tenant spread over `days`
 * days up to a minute ago (plus 20 000 of four other tenants), written with SQL and counted into
 * `email_log_counts` and `email_log_hour_counts` as the projector would, analysed and
 * checkpointed; and the matching `email_daily_v2` rows in ClickHouse.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type pg from 'pg';

const DAY_MS = 86_400_000;

export async function fillReadPath(
  pool: pg.Pool,
  ch: ClickHouseClient,
  opts: { tenantId: string; entries: number; days: number; now: number; firstDay: string },
): Promise<void> {
  const { tenantId, entries, days, now } = opts;
  const chunk = 250_000;
  const spacingMs = (days * DAY_MS - 60_000) / entries;
  for (let from = 0; from < entries; from += chunk) {
    await pool.query(
      `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, provider, message_id, template_id,
                               tags, created_at, state, version)
       SELECT $1, 'em_' || g, 'user' || (g % 50000) || '@example.com', 'Your receipt',
              (ARRAY['DELIVERED','DELIVERED','DELIVERED','SENT','BOUNCED','FAILED','QUEUED','DELIVERED'])[1 + g % 8],
              'ses', 'msg-' || g, 'tpl_' || (g % 20), '["receipt"]'::jsonb,
              to_timestamp(($2::bigint - g * $3::float8) / 1000.0),
              jsonb_build_object('openCount', g % 3, 'clickCount', (g % 7 = 0)::int, 'complaintCount', (g % 200 = 0)::int),
              1
         FROM generate_series($4::bigint, $5::bigint) AS g`,
      [tenantId, now - 60_000, spacingMs, from + 1, Math.min(from + chunk, entries)],
    );
  }
  await pool.query(
    `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, created_at, state, version)
     SELECT 'other_' || (g % 4), 'em_' || g, 'x@example.com', 's', 'SENT', now() - g * interval '1 minute', '{}', 1
       FROM generate_series(1, 20000) AS g`,
  );
  await pool.query(
    // No email names a project: the rows over every project (project_id '') are all there is.
    `INSERT INTO email_log_counts (tenant_id, project_id, day, status, n)
     SELECT tenant_id, '', (created_at AT TIME ZONE 'UTC')::date, status, count(*) FROM email_logs GROUP BY 1, 3, 4`,
  );
  await pool.query(
    `INSERT INTO email_log_hour_counts (tenant_id, project_id, hour, status, n)
     SELECT tenant_id, '', date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', status, count(*)
       FROM email_logs GROUP BY 1, 3, 4`,
  );
  await pool.query('VACUUM ANALYZE email_logs');
  // The fill's dirty pages written now, not by the checkpointer during the loads.
  await pool.query('CHECKPOINT');
  await pool.query('ANALYZE email_log_counts');
  await pool.query('ANALYZE email_log_hour_counts');
  // chDB: one row per (day, template), the sums of the entries above (shape of a merged table).
  await ch.command({
    query: `INSERT INTO email_daily_v2 (tenant_id, day, template_id, total, sent, opened, clicked, bounced, complained, failed)
            SELECT '${tenantId}', toDate('${opts.firstDay}') + d.number, concat('tpl_', toString(t.number)),
                   ${Math.ceil(entries / days / 20)}, ${Math.ceil((entries * 5) / 8 / days / 20)}, 100, 20, 5, 1, 5
              FROM numbers(${days}) AS d CROSS JOIN numbers(20) AS t`,
  });
}
