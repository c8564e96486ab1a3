-- DMARC aggregate reports (SPEC §26, issue 44) received by the inbound listener (SPEC §24).
-- Owned by packages/inbound (docs/architecture.md). One row per report attachment seen: a parsed
-- report (`stored`) with its records, or a refused one (`rejected`, with the reason, no records).
-- Never edit an applied file: add a new one instead.
CREATE TABLE dmarc_reports (
  id          text PRIMARY KEY,          -- dmr_…
  tenant_id   text NOT NULL,
  inbound_id  text NOT NULL,             -- the inbound_messages row it came in (kept if that is deleted)
  attachment  text,                      -- the attachment's file name
  status      text NOT NULL CHECK (status IN ('stored', 'rejected')),
  reason      text,                      -- why a rejected report was refused
  domain      text,                      -- policy_published.domain (lowercase); null when rejected
  org_name    text,                      -- the reporter (report_metadata.org_name)
  report_id   text,
  begin_at    timestamptz,
  end_at      timestamptz,
  policy      jsonb,                     -- { p, sp, pct, adkim, aspf }
  received_at timestamptz NOT NULL DEFAULT now()
);
-- A reporter's report counted once however often it is mailed.
CREATE UNIQUE INDEX dmarc_reports_once_idx ON dmarc_reports (tenant_id, domain, org_name, report_id)
  WHERE status = 'stored';
CREATE INDEX dmarc_reports_domain_idx ON dmarc_reports (tenant_id, domain, end_at DESC);

CREATE TABLE dmarc_records (
  report_id   text NOT NULL REFERENCES dmarc_reports (id) ON DELETE CASCADE,
  tenant_id   text NOT NULL,
  domain      text NOT NULL,
  end_at      timestamptz NOT NULL,
  source_ip   text NOT NULL,
  count       integer NOT NULL,
  disposition text NOT NULL,             -- none | quarantine | reject
  dkim        text NOT NULL,             -- DMARC-aligned DKIM: pass | fail
  spf         text NOT NULL,             -- DMARC-aligned SPF: pass | fail
  header_from text NOT NULL,
  auth        jsonb NOT NULL             -- auth_results: { dkim: [{ domain, result, selector }], spf: [{ domain, result }] }
);
CREATE INDEX dmarc_records_domain_idx ON dmarc_records (tenant_id, domain, end_at DESC);
CREATE INDEX dmarc_records_report_idx ON dmarc_records (report_id);
