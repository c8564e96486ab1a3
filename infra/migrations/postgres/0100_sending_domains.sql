-- Sending domains (SPEC §20): one row per (tenant, domain), written only by packages/sending-domains
-- (src/store.ts). Another tenant may add the same name: each verifies its own DKIM record.
-- Never edit an applied file: add a new one instead.

CREATE TABLE sending_domains (
  tenant_id       text        NOT NULL,                     -- owner tenant; every query is scoped by it
  id              text        NOT NULL,                     -- dom_ + 24 base62 characters
  name            text        NOT NULL                      -- the domain, lowercase, no trailing dot
                  CHECK (name = lower(name)),
  selector        text        NOT NULL,                     -- DKIM selector Tern chose (tern<yyyymm>)
  private_key_enc text        NOT NULL,                     -- SECRET: the RSA-2048 DKIM private key (PKCS#8 PEM), sealed
                                                            -- with AES-256-GCM under a key derived from WEBHOOK_SECRETS_KEY
  records         jsonb       NOT NULL,                     -- [{purpose, type, name, value, status}] as fixed at creation
                                                            -- and last checked (the public DKIM key is in the dkim value)
  status          text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'verified', 'failed')),
  reason          text,                                     -- why it is not verified (the records, by name); NULL when verified
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  pending_since   timestamptz NOT NULL,                     -- start of the current 72 h window (creation, or a verify-now
                                                            -- that reopened a failed domain)
  verified_at     timestamptz,                              -- when it last became verified; NULL before
  last_checked_at timestamptz,                              -- last DNS read; NULL before the first
  next_check_at   timestamptz,                              -- when the poller looks again (a claim moves it one lease ahead);
                                                            -- NULL: not polled (failed)
  version         int         NOT NULL DEFAULT 0,           -- bumped by every saved check: a check read on an older
                                                            -- version (poller and verify-now at once) is not saved
  transitions     int         NOT NULL DEFAULT 0,           -- changes to verified/failed so far: numbers the event ids
  pending_events  jsonb       NOT NULL DEFAULT '[]',        -- outbox: domain.verified/failed events saved with the change
                                                            -- and not yet acknowledged by the event log
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, name)                                  -- the 409 of a second POST; the signing lookup by name
);

-- The poller's claim: due checks by time.
CREATE INDEX sending_domains_due_idx ON sending_domains (next_check_at) WHERE next_check_at IS NOT NULL;
-- Events still to append.
CREATE INDEX sending_domains_outbox_idx ON sending_domains (updated_at) WHERE pending_events <> '[]'::jsonb;
-- The domain list: newest first.
CREATE INDEX sending_domains_tenant_created_idx ON sending_domains (tenant_id, created_at DESC, id COLLATE "C" DESC);
