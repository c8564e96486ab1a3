-- Inbound email (SPEC §24, issue 43). Owned by packages/inbound (docs/architecture.md). The
-- content of a message never enters the event log: it is sealed here (AES-256-GCM) under the
-- data key of the SENDER's address (data_keys, recorded for the inbound id in email_keys), so
-- erasing the sender deletes the key, and the erasure deletes the rows. Never edit an applied
-- file: add a new one instead.

-- The tenant's address under INBOUND_DOMAIN: `<anything>@<slug>.<INBOUND_DOMAIN>`.
CREATE TABLE inbound_addresses (
  slug       text PRIMARY KEY,          -- a DNS label derived from the tenant id
  tenant_id  text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE inbound_messages (
  id             text PRIMARY KEY,      -- inb_… (the event id of its email.received)
  tenant_id      text NOT NULL,
  received_at    timestamptz NOT NULL,
  dedup_key      text NOT NULL,         -- sha256 of (recipients, Message-ID, content hash): a resend within 24 h is the same message
  announced      boolean NOT NULL DEFAULT false, -- its email.received is in the log
  from_hash      text NOT NULL,         -- keyed hash of the sender (the sealing key's recipient_hash)
  to_hashes      text[] NOT NULL,       -- keyed hashes of the envelope recipients (filter, erasure)
  period         text NOT NULL,         -- the sealing key's month
  size           integer NOT NULL,      -- bytes of the raw message
  attachments    integer NOT NULL,      -- how many attachments
  auth           jsonb NOT NULL,        -- { spf, dkim, dmarc, arc } verdict words only
  in_reply_to    text,                  -- the tenant's email this answers (provider_messages)
  summary_iv     bytea NOT NULL,        -- sealed { from, to, subject } (the list's columns)
  summary_tag    bytea NOT NULL,
  summary        bytea NOT NULL,
  content_iv     bytea NOT NULL,        -- sealed { cc, text, html, headers, attachments, clientIp, helo, messageId }
  content_tag    bytea NOT NULL,
  content        bytea NOT NULL,
  raw_iv         bytea NOT NULL,        -- sealed raw MIME
  raw_tag        bytea NOT NULL,
  raw            bytea NOT NULL
);
CREATE INDEX inbound_messages_tenant_idx ON inbound_messages (tenant_id, received_at DESC, id DESC);
CREATE INDEX inbound_messages_dedup_idx ON inbound_messages (tenant_id, dedup_key);
CREATE INDEX inbound_messages_reply_idx ON inbound_messages (tenant_id, in_reply_to) WHERE in_reply_to IS NOT NULL;
ALTER TABLE inbound_messages ALTER COLUMN raw SET STORAGE EXTERNAL;

-- Routes (SPEC §24): the first match by priority acts.
CREATE TABLE inbound_routes (
  id         text PRIMARY KEY,
  tenant_id  text NOT NULL,
  priority   integer NOT NULL,
  match      jsonb NOT NULL,            -- { recipient, from?, subject? }
  actions    jsonb NOT NULL,            -- [{ webhook } | { forward } | { store } | { drop }]
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbound_routes_tenant_idx ON inbound_routes (tenant_id, priority, created_at);
