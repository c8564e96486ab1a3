-- The `projectId` filter of the delivery log at constant cost (SPEC §16, §19): one more equality
-- filter of the logs (services/api/src/logs/store.ts, EQUALITY_FILTERS).
-- Never edit an applied file: add a new one instead.

-- The counters gain the project: rows at project_id = '' count every entry of the tenant (the
-- unfiltered and status-only totals read those, as before); rows at project_id = 'prj_…' count
-- that project's entries again (the projectId totals read those). An entry without a project is
-- in the '' rows only. Project ids are never '' (prefixed ids), so the two never mix. Summing the
-- '' rows keeps the unfiltered total at days × statuses rows, however many projects a tenant has.
ALTER TABLE email_log_counts ADD COLUMN project_id text NOT NULL DEFAULT '';
ALTER TABLE email_log_counts ALTER COLUMN project_id DROP DEFAULT;
ALTER TABLE email_log_counts DROP CONSTRAINT email_log_counts_pkey;
ALTER TABLE email_log_counts ADD PRIMARY KEY (tenant_id, project_id, day, status);

INSERT INTO email_log_counts (tenant_id, project_id, day, status, n)
SELECT tenant_id, project_id, (created_at AT TIME ZONE 'UTC')::date, status, count(*)
  FROM email_logs
 WHERE created_at IS NOT NULL AND status IS NOT NULL AND project_id IS NOT NULL
 GROUP BY 1, 2, 3, 4;

-- The project index in the log's order (id in byte order, as email_logs_tenant_order_idx), so a
-- projectId page, cursor or deep page never sorts; `status` included so that a deep page with both
-- filters still steps over one day's entries in the index alone. Same name and leading columns as
-- the 0020 index it replaces (which also serves "does the project have emails").
DROP INDEX IF EXISTS email_logs_tenant_project_created_idx;
CREATE INDEX email_logs_tenant_project_created_idx
  ON email_logs (tenant_id, project_id, created_at DESC, id COLLATE "C" DESC) INCLUDE (status)
  WHERE created_at IS NOT NULL AND project_id IS NOT NULL;
