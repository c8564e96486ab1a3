-- Inbound email (SPEC §24, issue 43 item 5): the raw MIME of a large message sealed in parts of
-- 1 MiB, each in its own row, written before the message's row (docs/inbound.md, "Memory of a large
-- message"). Owned by packages/inbound (docs/architecture.md). A message up to one part keeps its
-- raw in inbound_messages as before (raw_parts = 0); a larger one has raw_parts > 0 and empty raw
-- columns. Parts whose message row never came (a crash between the two) are deleted by the
-- inbound sweeper; deleting a message (erasure, retention, a drop route) deletes its parts here.
-- Never edit an applied file: add a new one instead.
CREATE TABLE inbound_raw_parts (
  inbound_id text NOT NULL,             -- inb_… of the message (its row may not exist yet)
  part       integer NOT NULL,          -- 0, 1, … in order
  iv         bytea NOT NULL,            -- sealed under the message's key, label raw.<part>
  tag        bytea NOT NULL,
  ct         bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (inbound_id, part)
);
ALTER TABLE inbound_raw_parts ALTER COLUMN ct SET STORAGE EXTERNAL;
CREATE INDEX inbound_raw_parts_created_idx ON inbound_raw_parts (created_at);

ALTER TABLE inbound_messages ADD COLUMN raw_parts integer NOT NULL DEFAULT 0;

CREATE FUNCTION inbound_raw_parts_gone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM inbound_raw_parts p USING gone g WHERE p.inbound_id = g.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER inbound_messages_raw_parts_gone AFTER DELETE ON inbound_messages
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION inbound_raw_parts_gone();

-- inbound_store (0320) with the count of parts.
DROP FUNCTION inbound_store(text, text, timestamptz, text, timestamptz, text, text[], text, integer, integer,
  jsonb, text, bytea, bytea, bytea, bytea, bytea, bytea, bytea, bytea, bytea);
CREATE FUNCTION inbound_store(
  p_id text, p_tenant_id text, p_received_at timestamptz, p_dedup_key text, p_since timestamptz,
  p_from_hash text, p_to_hashes text[], p_period text, p_size integer, p_attachments integer,
  p_auth jsonb, p_in_reply_to text,
  p_summary_iv bytea, p_summary_tag bytea, p_summary bytea,
  p_content_iv bytea, p_content_tag bytea, p_content bytea,
  p_raw_iv bytea, p_raw_tag bytea, p_raw bytea, p_raw_parts integer
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
    raw_iv, raw_tag, raw, raw_parts)
  VALUES (p_id, p_tenant_id, p_received_at, p_dedup_key, p_from_hash, p_to_hashes, p_period, p_size,
    p_attachments, p_auth, p_in_reply_to, p_summary_iv, p_summary_tag, p_summary, p_content_iv,
    p_content_tag, p_content, p_raw_iv, p_raw_tag, p_raw, p_raw_parts);
  RETURN QUERY SELECT p_id, false, true;
END
$$;
