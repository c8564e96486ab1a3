-- Attachments of a send (SPEC §22, issue 28): the bytes live here, never in the event log (the
-- email.queued and outgoing_emails.message carry only what describes them: filename, content
-- type, content id, size, sha256). The bytes are sealed (AES-256-GCM) under the data key of the
-- email's recipient and month, the key its email.queued is sealed under (email_keys): erasure
-- and retention delete the key, and delete these rows (services/api src/contacts/erase.ts,
-- src/retention-job.ts). Written by `enqueueSends` (packages/sending) before email.queued is
-- appended, read by the sender when it composes the message. Never edit an applied file: add a
-- new one instead.

CREATE TABLE email_attachments (
  tenant_id      text NOT NULL,
  email_id       text NOT NULL,        -- outgoing_emails.id / email_logs.id
  position       integer NOT NULL,     -- the attachment's index in the send's `attachments`
  recipient_hash text NOT NULL,        -- the sealing key: data_keys (tenant_id, recipient_hash, period)
  period         text NOT NULL,
  iv             bytea NOT NULL,
  tag            bytea NOT NULL,
  content        bytea NOT NULL,       -- the sealed bytes (ciphertext)
  created_at     timestamptz NOT NULL, -- the queued time (= the email's createdAt): the retention sweep's range
  PRIMARY KEY (tenant_id, email_id, position)
);

-- The retention job's sweep of rows left by deleted emails: a range per tenant.
CREATE INDEX email_attachments_tenant_created_idx ON email_attachments (tenant_id, created_at);

-- Ciphertext does not compress: kept out of line without trying.
ALTER TABLE email_attachments ALTER COLUMN content SET STORAGE EXTERNAL;
