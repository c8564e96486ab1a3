-- Crypto-shredding (SPEC §14, issue 14 part 2): personal fields of events (email.queued's
-- toEmail and subject) travel in the event log encrypted under a data key per
-- (tenant, recipient, UTC month). Erasure deletes every key of a recipient, retention deletes
-- whole months: the log's copies become unreadable, so a replay cannot bring them back.
CREATE TABLE data_keys (
  tenant_id      text        NOT NULL,
  recipient_hash text        NOT NULL,                -- HMAC-SHA256(ENCRYPTION_KEY-derived key,
                                                      -- tenant + "\n" + lowercased address), base64url
  period         text        NOT NULL                 -- UTC month of the sealed event, 'YYYY-MM'
                 CHECK (period ~ '^[0-9]{4}-[0-9]{2}$'),
  wrapped_key    bytea       NOT NULL,                -- iv 12 ‖ tag 16 ‖ AES-256-GCM(wrapping key, data key 32)
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, recipient_hash, period)
);
-- Retention deletes months before a cut-off across tenants.
CREATE INDEX data_keys_period ON data_keys (period);

-- Erased addresses, kept as the keyed hash only: a later send to one is suppressed (the sender's
-- suppression check matches these hashes as well as the clear `suppressions` rows).
CREATE TABLE erased_recipients (
  tenant_id      text        NOT NULL,
  recipient_hash text        NOT NULL,                -- as data_keys.recipient_hash
  erased_at      timestamptz NOT NULL DEFAULT now(),  -- first erasure (a repeat keeps it)
  PRIMARY KEY (tenant_id, recipient_hash)
);
