-- Inbound email (SPEC §24, issue 43): one round trip to store an arrival. Owned by packages/inbound
-- (docs/architecture.md). Under an advisory lock on the dedup key (held until the statement's
-- transaction ends), the first message of the key received since `p_since` or never announced is
-- answered (`fresh = false`); else the row is inserted (`fresh = true`). PL/pgSQL takes a new
-- snapshot per statement (READ COMMITTED), so the look-up made after the lock sees a racer's row
-- committed before it: one statement of plain SQL could not (its snapshot predates the lock).
-- Never edit an applied file: add a new one instead.
CREATE FUNCTION inbound_store(
  p_id text, p_tenant_id text, p_received_at timestamptz, p_dedup_key text, p_since timestamptz,
  p_from_hash text, p_to_hashes text[], p_period text, p_size integer, p_attachments integer,
  p_auth jsonb, p_in_reply_to text,
  p_summary_iv bytea, p_summary_tag bytea, p_summary bytea,
  p_content_iv bytea, p_content_tag bytea, p_content bytea,
  p_raw_iv bytea, p_raw_tag bytea, p_raw bytea
) RETURNS TABLE (id text, announced boolean, fresh boolean)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant_id || E'\n' || p_dedup_key, 43));
  RETURN QUERY
    SELECT m.id, m.announced, false FROM inbound_messages m
     WHERE m.tenant_id = p_tenant_id AND m.dedup_key = p_dedup_key
       AND (m.received_at >= p_since OR NOT m.announced)
     ORDER BY m.received_at LIMIT 1;
  IF FOUND THEN
    RETURN;
  END IF;
  INSERT INTO inbound_messages (id, tenant_id, received_at, dedup_key, from_hash, to_hashes, period, size,
    attachments, auth, in_reply_to, summary_iv, summary_tag, summary, content_iv, content_tag, content,
    raw_iv, raw_tag, raw)
  VALUES (p_id, p_tenant_id, p_received_at, p_dedup_key, p_from_hash, p_to_hashes, p_period, p_size,
    p_attachments, p_auth, p_in_reply_to, p_summary_iv, p_summary_tag, p_summary, p_content_iv,
    p_content_tag, p_content, p_raw_iv, p_raw_tag, p_raw);
  RETURN QUERY SELECT p_id, false, true;
END
$$;
