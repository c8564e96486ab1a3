-- Deep `page` offsets of the delivery log at a bounded cost (SPEC §7, §19; issue 10): the day
-- counters (0040, 0041) guide a deep page to its day, these guide it to its hour, so the index
-- walk steps over at most one hour's entries instead of one day's.
-- Never edit an applied file: add a new one instead.

-- Same rows as email_log_counts (project_id '' over every project, 'prj_…' per project), at the
-- UTC hour of created_at; kept by the projector in the same transaction as the day counters and
-- the email_logs rows (services/projector/src/pg-sink.ts), so within a day they sum to the day's
-- counter. Read only for the one day holding a deep page; totals keep reading the day counters.
-- The retention job deletes the hours before the cut-off day. Rows at n = 0 may remain.
CREATE TABLE email_log_hour_counts (
  tenant_id  text        NOT NULL,
  project_id text        NOT NULL,
  hour       timestamptz NOT NULL,                 -- date_trunc('hour', created_at) in UTC
  status     text        NOT NULL,
  n          bigint      NOT NULL,
  PRIMARY KEY (tenant_id, project_id, hour, status)
);

INSERT INTO email_log_hour_counts (tenant_id, project_id, hour, status, n)
SELECT tenant_id, '', date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', status, count(*)
  FROM email_logs
 WHERE created_at IS NOT NULL AND status IS NOT NULL
 GROUP BY 1, 3, 4
UNION ALL
SELECT tenant_id, project_id, date_trunc('hour', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', status, count(*)
  FROM email_logs
 WHERE created_at IS NOT NULL AND status IS NOT NULL AND project_id IS NOT NULL
 GROUP BY 1, 2, 3, 4;
