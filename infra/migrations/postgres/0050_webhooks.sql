-- Outgoing webhooks (SPEC §17): endpoints, one delivery per (event, endpoint[, replay]), and
-- every HTTP attempt of a delivery. Deliveries are the dispatcher's durable retry queue:
-- workers claim due rows with FOR UPDATE SKIP LOCKED and a lease (next_attempt_at pushed ahead), so several dispatchers share
-- the work and a crashed one's in-flight deliveries are retried after the lease ends.

CREATE TABLE webhook_endpoints (
  tenant_id       text        NOT NULL,              -- owner tenant; every query is scoped by it
  id              text        NOT NULL,              -- wh_ + 24 base62
  url             text        NOT NULL,              -- target; never logged
  description     text,                              -- free text from the tenant
  event_types     text[],                            -- filter; NULL = every event type
  enabled         boolean     NOT NULL DEFAULT true, -- false: no new deliveries are made
  disabled_reason text,                              -- why the dispatcher disabled it (NULL if by PATCH or enabled)
  secret_enc      text        NOT NULL,              -- current whsec_ secret, AES-256-GCM under the server key
  previous_secret_enc        text,                   -- the secret before the last rotation, encrypted likewise
  previous_secret_expires_at timestamptz,            -- it keeps signing (second signature) until then
  failing_since   timestamptz,                       -- first failed attempt since the last success; NULL = healthy
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- The dispatcher looks up a tenant's enabled endpoints for every event it reads.
CREATE INDEX webhook_endpoints_enabled_idx ON webhook_endpoints (tenant_id) WHERE enabled;

CREATE TABLE webhook_deliveries (
  id              bigserial   PRIMARY KEY,            -- internal; the API lists by endpoint
  tenant_id       text        NOT NULL,
  endpoint_id     text        NOT NULL,
  event_id        text        NOT NULL,               -- the event's id = the webhook-id header
  event_type      text        NOT NULL,
  email_id        text        NOT NULL,
  replay_id       text        NOT NULL DEFAULT '',    -- '' for the live delivery; the replay's id otherwise
  event           jsonb       NOT NULL,               -- the event as read from the log (no body is built before the first attempt)
  request_body    text,                               -- PERSONAL DATA: the JSON body sent (fixed at the first attempt, same on retries)
  recipient       text,                               -- PERSONAL DATA: the email's recipient, for erasure (issue 14)
  status          text        NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        int         NOT NULL DEFAULT 0,     -- HTTP attempts made
  next_attempt_at timestamptz NOT NULL,               -- due time of the next attempt; a claim moves it one lease ahead,
                                                      -- so a crashed worker's delivery is due again when the lease ends
  last_status_code int,                               -- HTTP status of the last attempt; NULL = no answer
  last_error      text,                               -- why the last attempt failed
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  UNIQUE (endpoint_id, event_id, replay_id)           -- the log is read at-least-once: a re-read makes nothing new
);

-- Due work: the claim query scans pending rows by due time.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
-- The deliveries page of an endpoint, newest first.
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (tenant_id, endpoint_id, id DESC);

CREATE TABLE webhook_attempts (
  delivery_id      bigint      NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt          int         NOT NULL,              -- 1-based
  started_at       timestamptz NOT NULL,
  duration_ms      int         NOT NULL,
  status_code      int,                               -- NULL: no HTTP answer (timeout, refused, blocked address)
  error            text,                              -- NULL on success
  response_excerpt text,                              -- first ≤ 1 KiB of the answer body (UTF-8)
  PRIMARY KEY (delivery_id, attempt)
);

-- Replays asked through the API; the dispatcher runs them (it owns the event log reader).
CREATE TABLE webhook_replays (
  id           text        PRIMARY KEY,              -- rpl_ + random
  tenant_id    text        NOT NULL,
  endpoint_id  text        NOT NULL,
  since        timestamptz NOT NULL,                 -- events with occurredAt in [since, until)
  until        timestamptz NOT NULL,
  status       text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done')),
  claimed_until timestamptz,                         -- lease of the dispatcher running it
  enqueued     int         NOT NULL DEFAULT 0,       -- deliveries made
  created_at   timestamptz NOT NULL,
  finished_at  timestamptz
);
CREATE INDEX webhook_replays_pending_idx ON webhook_replays (created_at) WHERE status <> 'done';
