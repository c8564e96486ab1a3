-- Sending (SPEC §11): the send command's content and the sender's durable due-list, the
-- Idempotency-Key record, the sandbox's kept messages, the per-tenant tracking setting and the
-- email timeline read model. Never edit an applied file: add a new one instead.

-- One row per email sent through POST /emails/send|batch. It is the ONLY place that holds the
-- message content (recipients, subject, bodies, headers, variables): the email.queued event
-- carries what the log entry shows (toEmail, subject, tags…), never the bodies. Issue 14's
-- crypto-shredding encrypts `message` (and the event's toEmail/subject) per recipient.
-- It is also the sender's due-list: claimed with FOR UPDATE SKIP LOCKED and a lease.
CREATE TABLE outgoing_emails (
  tenant_id    text        NOT NULL,
  id           text        NOT NULL,                 -- em_… (the emailId of its events)
  state        text        NOT NULL
               CHECK (state IN ('awaiting_log',      -- written, email.queued not yet consumed
                                'pending',           -- due at due_at (first try or retry)
                                'sending',           -- claimed by a sender until lease_until
                                'done',              -- final outcome appended to the log
                                'cancelling',        -- cancelled; email.cancelled not yet in the log
                                'cancelled')),       -- cancelled and logged; never sent
  due_at       timestamptz NOT NULL,                 -- when it may be handed to the provider
  attempts     int         NOT NULL DEFAULT 0,       -- provider attempts started (> 0 = handed)
  lease_until  timestamptz,                          -- a 'sending' row whose lease ran out is
                                                     -- claimed again (its sender died)
  message      jsonb       NOT NULL,                 -- from, to, cc, bcc, replyTo, subject, html,
                                                     -- text, templateId, variables, headers, tags
  scheduled_at timestamptz,                          -- as requested; NULL = send now
  project_id   text,                                 -- optional project (SPEC §16)
  last_error   text,                                 -- last provider answer of a failed try
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- The due-list scan: only rows a sender may claim.
CREATE INDEX outgoing_emails_due_idx ON outgoing_emails (due_at) WHERE state = 'pending';
CREATE INDEX outgoing_emails_lease_idx ON outgoing_emails (lease_until) WHERE state = 'sending';
CREATE INDEX outgoing_emails_cancelling_idx ON outgoing_emails (updated_at) WHERE state = 'cancelling';

-- Idempotency-Key of POST /emails/send|batch (SPEC §11): per tenant, 24 h.
CREATE TABLE idempotency_keys (
  tenant_id    text        NOT NULL,
  key          text        NOT NULL,                 -- the header value (1..256 chars)
  route        text        NOT NULL,                 -- 'send' or 'batch'
  request_hash text        NOT NULL,                 -- SHA-256 of route + canonical body
  status_code  int,                                  -- NULL while the first request runs
  response     jsonb,                                -- the first answer, replayed as is
  created_at   timestamptz NOT NULL,                 -- the key expires 24 h after this
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- Messages the sandbox provider accepted (SPEC §11: kept, shown at GET /emails/:id/content).
CREATE TABLE sandbox_messages (
  tenant_id  text        NOT NULL,
  email_id   text        NOT NULL,
  message    jsonb       NOT NULL,                   -- rendered message as handed to the provider
                                                     -- (tracking applied), with its Message-ID
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, email_id)
);

-- Per-tenant tracking (SPEC §11), default both on; NULL = default.
ALTER TABLE tenant_settings ADD COLUMN tracking_opens boolean;
ALTER TABLE tenant_settings ADD COLUMN tracking_clicks boolean;
-- A tenant may now have a settings row without a retention override.
ALTER TABLE tenant_settings ALTER COLUMN updated_at SET DEFAULT now();

-- The timeline of GET /emails/:id: every event the projector folded, written in its transaction.
CREATE TABLE email_events (
  tenant_id   text        NOT NULL,
  email_id    text        NOT NULL,
  event_id    text        NOT NULL,                  -- envelope id (dedup happens before)
  type        text        NOT NULL,
  occurred_at timestamptz NOT NULL,
  data        jsonb       NOT NULL,
  PRIMARY KEY (tenant_id, email_id, event_id)
);
