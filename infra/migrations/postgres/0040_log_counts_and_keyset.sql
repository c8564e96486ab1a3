-- The delivery log at constant cost (SPEC §7, §19; docs/architecture.md "Logs at constant cost").
-- Never edit an applied file: add a new one instead.

-- Visible log entries per tenant, UTC day of created_at and status, kept by the projector in the
-- same transaction as the email_logs rows it changes (services/projector/src/pg-sink.ts). The
-- retention cut-off is the start of a UTC day, so Σ n over day >= the cut-off day is exactly
-- count(*) of the visible entries, and per status exactly the status-filtered count. The
-- retention job deletes the rows of days before the cut-off. Rows at n = 0 may remain.
CREATE TABLE email_log_counts (
  tenant_id text   NOT NULL,
  day       date   NOT NULL,                         -- (created_at AT TIME ZONE 'UTC')::date
  status    text   NOT NULL,                         -- email_logs.status of the entries counted
  n         bigint NOT NULL,                         -- entries of that tenant, day and status
  PRIMARY KEY (tenant_id, day, status)
);

INSERT INTO email_log_counts (tenant_id, day, status, n)
SELECT tenant_id, (created_at AT TIME ZONE 'UTC')::date, status, count(*)
  FROM email_logs
 WHERE created_at IS NOT NULL AND status IS NOT NULL
 GROUP BY 1, 2, 3;

-- The log order (created_at desc, id desc in byte order) as an index whatever the database's
-- collation, so that pages, keyset cursors and deep offsets never sort. Replaces the 0001 index
-- (same leading columns and predicate, still serving the retention job).
CREATE INDEX email_logs_tenant_order_idx
  ON email_logs (tenant_id, created_at DESC, id COLLATE "C" DESC)
  WHERE created_at IS NOT NULL;
DROP INDEX IF EXISTS email_logs_tenant_created_idx;

-- The `status` filter: one equality column before the order. Another equality filter (e.g. a
-- project id) is one more index of this shape.
CREATE INDEX email_logs_tenant_status_order_idx
  ON email_logs (tenant_id, status, created_at DESC, id COLLATE "C" DESC)
  WHERE created_at IS NOT NULL;
