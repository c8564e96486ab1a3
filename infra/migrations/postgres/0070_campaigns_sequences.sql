-- Campaigns and sequences (SPEC §15). Never edit an applied file: add a new one instead.

-- A campaign: one message to every subscribed, non-suppressed contact of an audience. Its row is
-- also the fan-out job: claimed with FOR UPDATE SKIP LOCKED and a lease, it walks the audience
-- with a keyset cursor over contact ids, so 100 000 recipients never sit in memory at once.
CREATE TABLE campaigns (
  tenant_id     text        NOT NULL,                   -- owner tenant; every query is scoped by it
  id            text        NOT NULL,                   -- cmp_ + 24 base62 characters
  name          text        NOT NULL,                   -- display name, 1..100
  from_address  text        NOT NULL,                   -- `addr` or `Name <addr>`
  audience      text        NOT NULL,                   -- audience name (contacts.audiences)
  template_id   text,                                   -- a template of the tenant, or NULL
  subject       text,                                   -- own subject (or the template's override)
  html          text,                                   -- own html part, or NULL
  text          text,                                   -- own text part, or NULL
  status        text        NOT NULL
                CHECK (status IN ('draft', 'scheduled', 'sending', 'sent', 'cancelled')),
  scheduled_at  timestamptz,                            -- requested send time; NULL = when sent
  snapshot_at   timestamptz,                            -- fan-out start: contacts created later are
                                                        -- not in the audience "at that moment"
  fanout_cursor text,                                   -- last contact id handed over (keyset)
  lease_owner   text,                                   -- the worker holding the fan-out job
  lease_until   timestamptz,                            -- a lapsed lease is taken over (worker died)
  sent_at       timestamptz,                            -- fan-out finished
  cancelled_at  timestamptz,                            -- cancelled before it fell due
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
-- The list: newest first, tie-break id in byte order.
CREATE INDEX campaigns_tenant_created_idx ON campaigns (tenant_id, created_at DESC, id COLLATE "C" DESC);
-- The fan-out worker's scan: only campaigns that are or may become due.
CREATE INDEX campaigns_due_idx ON campaigns (scheduled_at) WHERE status IN ('scheduled', 'sending');

-- Every email a campaign or a sequence step produced, written before its email.queued is
-- appended. The email id is derived from (campaign, contact) or (enrollment, step), so a retried
-- or restarted fan-out finds its row and re-appends the same id (deduplicated downstream).
-- Per-campaign and per-step stats join it to email_logs by primary key.
CREATE TABLE bulk_emails (
  tenant_id   text        NOT NULL,
  email_id    text        NOT NULL,                     -- em_ + 32 hex (derived, see above)
  source      text        NOT NULL,                     -- campaign:<id> or sequence:<id>
  step        int         NOT NULL DEFAULT 0,           -- sequence step (0-based); 0 for campaigns
  contact_id  text        NOT NULL,                     -- the recipient contact (no address here)
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, email_id)
);
CREATE INDEX bulk_emails_source_idx ON bulk_emails (tenant_id, source, step);
CREATE INDEX bulk_emails_contact_idx ON bulk_emails (tenant_id, source, contact_id);

-- Unsubscribes per source (the `unsubscribed` stat of a campaign or sequence step's mail).
CREATE TABLE unsubscribe_sources (
  tenant_id  text        NOT NULL,
  source     text        NOT NULL,                      -- campaign:<id> or sequence:<id>
  email_hash text        NOT NULL,                      -- SHA-256 hex of the lowercased address
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, source, email_hash)
);

-- A sequence: 1..20 steps, each sent at enrollment + the sum of the delays up to it.
CREATE TABLE sequences (
  tenant_id    text        NOT NULL,
  id           text        NOT NULL,                    -- seq_ + 24 base62 characters
  name         text        NOT NULL,
  from_address text        NOT NULL,
  steps        jsonb       NOT NULL,                    -- [{ delayMinutes, templateId?, subject?, html?, text? }]
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sequences_tenant_created_idx ON sequences (tenant_id, created_at DESC, id COLLATE "C" DESC);

-- One contact going through one sequence; the durable schedule of its next step, claimed by the
-- sequence worker with FOR UPDATE SKIP LOCKED and a lease.
CREATE TABLE sequence_enrollments (
  tenant_id    text        NOT NULL,
  id           text        NOT NULL,                    -- enr_ + 24 base62 characters
  sequence_id  text        NOT NULL,
  contact_id   text        NOT NULL,
  state        text        NOT NULL
               CHECK (state IN ('active', 'completed', 'stopped', 'cancelled')),
  stop_reason  text,                                    -- unsubscribed | suppressed | erased (stopped)
  next_step    int         NOT NULL DEFAULT 0,          -- the step to send next (0-based)
  next_due_at  timestamptz,                             -- when it falls due; NULL once not active
  lease_owner  text,
  lease_until  timestamptz,
  enrolled_at  timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sequence_enrollments_due_idx ON sequence_enrollments (next_due_at) WHERE state = 'active';
-- One active enrollment per contact and sequence (a second POST → 409).
CREATE UNIQUE INDEX sequence_enrollments_active_idx
  ON sequence_enrollments (tenant_id, sequence_id, contact_id) WHERE state = 'active';
CREATE INDEX sequence_enrollments_sequence_idx ON sequence_enrollments (tenant_id, sequence_id);
