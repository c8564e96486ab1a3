-- Serves the retention job (services/api/src/retention-job.ts): tenants without an override
-- share one cut-off, so their expired rows are found by created_at alone, across tenants.
-- 0001's (tenant_id, created_at DESC, id DESC) index cannot serve that range without a tenant.
-- Rows not yet queued (created_at NULL) are never expired by retention, so they stay out.
CREATE INDEX IF NOT EXISTS email_logs_created_at_idx
  ON email_logs (created_at)
  WHERE created_at IS NOT NULL;
