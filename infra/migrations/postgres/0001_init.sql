-- Tern Postgres schema, version 1. Applied once, in one transaction, by migratePostgres
-- (packages/stores/src/migrations.ts), which records it in schema_migrations. Never edit an
-- applied file: add 0002_… instead. See docs/architecture.md "Stores" and "Exactly-once effect".

-- The delivery log: one row per email, the fold of all its events (SPEC §5, §7).
CREATE TABLE email_logs (
  tenant_id   text        NOT NULL,                  -- owner tenant; every query is scoped by it
  id          text        NOT NULL,                  -- the emailId of the events (SPEC §5)
  to_email    text,                                  -- recipient, from email.queued
  subject     text,                                  -- subject, from email.queued
  status      text                                   -- folded status; NULL before the first event
              CHECK (status IN ('QUEUED', 'SCHEDULED', 'SENT', 'DELAYED', 'DELIVERED',
                                'BOUNCED', 'FAILED', 'SUPPRESSED', 'CANCELLED')),
  provider    text,                                  -- from email.sent; NULL until sent
  message_id  text,                                  -- provider message id; NULL until sent
  template_id text,                                  -- from email.queued; NULL when none
  tags        jsonb       NOT NULL DEFAULT '[]',     -- string array from email.queued
  created_at  timestamptz,                           -- occurredAt of email.queued; NULL = not yet
                                                     -- queued, so the row is invisible
  state       jsonb       NOT NULL,                  -- full fold state (domain email-fold), the
                                                     -- source of every column above
  version     int         NOT NULL DEFAULT 0,        -- bumped on every change (optimistic checks)
  updated_at  timestamptz NOT NULL DEFAULT now(),    -- last write by the projector
  PRIMARY KEY (tenant_id, id)
);

-- Serves the logs page (newest first, tiebreak id) and the retention cut-off; rows not yet
-- queued are never listed, so they stay out of the index.
CREATE INDEX email_logs_tenant_created_idx
  ON email_logs (tenant_id, created_at DESC, id DESC)
  WHERE created_at IS NOT NULL;

-- Event ids already folded: the idempotency record that makes duplicates and replays no-ops.
CREATE TABLE processed_events (
  tenant_id    text        NOT NULL,                 -- ids are unique per tenant
  event_id     text        NOT NULL,                 -- envelope id (the idempotency key)
  processed_at timestamptz NOT NULL DEFAULT now(),   -- when it was folded; lets a job prune ids
                                                     -- older than any possible redelivery
  PRIMARY KEY (tenant_id, event_id)
);
CREATE INDEX processed_events_processed_at_idx ON processed_events (processed_at);

-- ClickHouse deltas written in the projector's transaction, shipped, then deleted.
CREATE TABLE analytics_outbox (
  batch_id   text        PRIMARY KEY,                -- fresh per projector batch; becomes the
                                                     -- ClickHouse batch_id and dedup token
  rows       jsonb       NOT NULL,                   -- array of per (tenant, day, template) deltas
  created_at timestamptz NOT NULL DEFAULT now()      -- shipping order; age marks abandoned batches
);

-- Records that could not be processed, kept for inspection and never retried automatically.
CREATE TABLE dead_letters (
  id         bigserial   PRIMARY KEY,
  source     text        NOT NULL,                   -- component that gave up (e.g. 'projector')
  payload    text        NOT NULL,                   -- the raw record as received
  reason     text        NOT NULL,                   -- why it was rejected
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Progress of each projection, for readiness and lag reporting.
CREATE TABLE projection_status (
  name          text        PRIMARY KEY,             -- projection name (e.g. 'projector')
  last_event_at timestamptz,                         -- newest occurredAt folded so far
  last_batch_at timestamptz,                         -- when the last batch committed
  events_total  bigint      NOT NULL DEFAULT 0       -- events applied since the start
);

-- Per-tenant overrides; a tenant without a row uses the defaults (SPEC §3, §9).
CREATE TABLE tenant_settings (
  tenant_id      text        PRIMARY KEY,
  retention_days int         CHECK (retention_days BETWEEN 1 AND 3650), -- NULL = RETENTION_DAYS
  updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Template metadata for top-templates (names and subjects); events only carry the id.
CREATE TABLE templates (
  tenant_id  text        NOT NULL,
  id         text        NOT NULL,                   -- the templateId of email.queued
  name       text        NOT NULL,                   -- display name
  subject    text        NOT NULL,                   -- default subject line
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

-- API keys (SPEC §3, §8). The clear key is shown once and never stored.
CREATE TABLE api_keys (
  id           text        PRIMARY KEY,              -- public key id, used in DELETE …/:keyId
  tenant_id    text        NOT NULL,                 -- owner tenant
  name         text        NOT NULL,                 -- label chosen by the user (1..100 chars)
  scopes       text[]      NOT NULL,                 -- granted scopes (SPEC §3 list)
  key_hash     text        NOT NULL UNIQUE,          -- SHA-256 hex of the clear key: the lookup
  prefix       text        NOT NULL,                 -- first characters of the key, shown in lists
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,                          -- updated coarsely on successful use
  expires_at   timestamptz,                          -- NULL = never expires
  revoked_at   timestamptz                           -- set by DELETE; a revoked key gets 401
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id);

-- The Postgres-table event log (packages/event-log, used when KAFKA_BROKERS is unset). The
-- adapter may create these itself, hence IF NOT EXISTS; the shapes must stay identical.
CREATE TABLE IF NOT EXISTS event_log (
  seq         bigserial primary key,                 -- global order; consumers read seq > offset
  key         text not null,                         -- emailId (the Kafka key)
  value       text not null,                         -- the event as JSON
  appended_at timestamptz default now()
);
CREATE TABLE IF NOT EXISTS event_log_offsets (
  group_id text primary key,                         -- consumer group name
  next_seq bigint not null                           -- first seq the group has not committed
);
