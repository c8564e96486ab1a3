-- The event stream (SPEC §25, issue 42): every event the projector folds, in one order per tenant
-- that never changes. `seq` is assigned by the projector inside its batch transaction from the
-- tenant's row of `event_stream_heads`, which that transaction keeps locked until it commits: a
-- tenant's batches commit in `seq` order, so a reader that sees `seq` N sees every seq below it
-- (the visibility horizon is the commit itself; no reader ever skips a late commit).
CREATE TABLE event_stream_heads (
  tenant_id       text PRIMARY KEY,
  last_seq        bigint NOT NULL DEFAULT 0,   -- the last seq handed out (committed with its events)
  expired_through bigint NOT NULL DEFAULT 0    -- retention deleted every event up to this seq
);

CREATE TABLE event_stream (
  tenant_id   text NOT NULL,
  seq         bigint NOT NULL,
  event_id    text NOT NULL,
  email_id    text NOT NULL,
  project_id  text,
  type        text NOT NULL,
  tags        text[] NOT NULL DEFAULT '{}',
  recorded_at timestamptz NOT NULL,
  payload     jsonb NOT NULL,                  -- the event as its webhook body (SPEC §17) plus its id
  PRIMARY KEY (tenant_id, seq)
);
-- An event appears once (a rebuild replaying the log adds nothing already streamed).
CREATE UNIQUE INDEX event_stream_event_idx ON event_stream (tenant_id, event_id);
-- Erasure and the `emailId` filter go by email; retention by time.
CREATE INDEX event_stream_email_idx ON event_stream (tenant_id, email_id);
CREATE INDEX event_stream_time_idx ON event_stream (tenant_id, recorded_at);
