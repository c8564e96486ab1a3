-- Inbound email (SPEC §24, issue 43): inbound_store (0440) on cached plans again. 0460 had the
-- function plan every call for its values, so that a generic plan made while the table was nearly
-- empty could not keep scanning the tenant as it grew; planning the dedup look-up and the
-- 22-parameter INSERT on every call cost ≈ 150 µs of Postgres CPU per arrival (bench/README.md,
-- "inbound_store on cached plans"). Now a generic plan cannot be a scan of the tenant, whatever the
-- table's size when it was made:
-- - the look-up is planned apart from its ORDER BY … LIMIT 1 (OFFSET 0), so the received_at index
--   of the tenant, walked in order until the key turns up, is never the cheaper guess;
-- - sequential scans are off inside the function (`enable_seqscan`: a cost penalty, not a ban), so
--   over a few rows the plan is still the dedup index, not a scan of the table.
-- The same answers (the first matching row by received_at). A change of the function only: no lock
-- on the table, no rewrite. packages/inbound/test/store-plan.int.test.ts reads the rows a call
-- touches after the table grew on a connection that planned it nearly empty.
-- Owned by packages/inbound (docs/architecture.md). Never edit an applied file: add a new one instead.
CREATE OR REPLACE FUNCTION inbound_store(
  p_id text, p_tenant_id text, p_received_at timestamptz, p_dedup_key text, p_since timestamptz,
  p_from_hash text, p_to_hashes text[], p_period text, p_size integer, p_attachments integer,
  p_auth jsonb, p_in_reply_to text,
  p_summary_iv bytea, p_summary_tag bytea, p_summary bytea,
  p_content_iv bytea, p_content_tag bytea, p_content bytea,
  p_raw_iv bytea, p_raw_tag bytea, p_raw bytea, p_raw_parts integer
) RETURNS TABLE (id text, announced boolean, fresh boolean)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant_id || E'\n' || p_dedup_key, 43));
  -- OFFSET 0 keeps the ORDER BY … LIMIT 1 out of the choice of the scan: the look-up is the dedup
  -- index's (tenant, key: a row or two), never the tenant's received_at index walked in order
  -- until a key turns up, which for a new key is the whole tenant.
  RETURN QUERY
    SELECT d.id, d.announced, false FROM (
      SELECT m.id, m.announced, m.received_at FROM inbound_messages m
       WHERE m.tenant_id = p_tenant_id AND m.dedup_key = p_dedup_key
         AND (m.received_at >= p_since OR NOT m.announced)
      OFFSET 0) d
     ORDER BY d.received_at LIMIT 1;
  IF FOUND THEN
    RETURN;
  END IF;
  INSERT INTO inbound_messages (id, tenant_id, received_at, dedup_key, from_hash, to_hashes, period, size,
    attachments, auth, in_reply_to, summary_iv, summary_tag, summary, content_iv, content_tag, content,
    raw_iv, raw_tag, raw, raw_parts)
  VALUES (p_id, p_tenant_id, p_received_at, p_dedup_key, p_from_hash, p_to_hashes, p_period, p_size,
    p_attachments, p_auth, p_in_reply_to, p_summary_iv, p_summary_tag, p_summary, p_content_iv,
    p_content_tag, p_content, p_raw_iv, p_raw_tag, p_raw, p_raw_parts);
  RETURN QUERY SELECT p_id, false, true;
END
$$;
