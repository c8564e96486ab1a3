-- Retention of DMARC aggregate reports (SPEC §9, §26; docs/analytics.md "DMARC aggregate reports"):
-- the retention job deletes the reports received before each tenant's cut-off (their records go
-- with them, ON DELETE CASCADE), and the read hides them at once. Owner: packages/inbound.
-- Never edit an applied file: add a new one instead.
CREATE INDEX dmarc_reports_received_idx ON dmarc_reports (received_at);
