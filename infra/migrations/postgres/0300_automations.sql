-- Automations (SPEC §27, docs/automations.md). Owner: packages/bulk/src/automations/.
-- Never edit an applied file: add a new one.

-- An automation: a trigger event and a tree of steps each contact's run goes through.
CREATE TABLE automations (
  tenant_id     text        NOT NULL,
  id            text        NOT NULL,                  -- aut_ + 24 base62 characters
  name          text        NOT NULL,
  from_address  text,                                  -- sender of its `send` steps
  trigger_event text        NOT NULL,                  -- contact.created | contact.updated | a delivery event type | a custom name
  steps         jsonb       NOT NULL,                  -- [AutomationStep] (packages/contracts/src/automations.ts)
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX automations_trigger_idx ON automations (tenant_id, trigger_event);
CREATE INDEX automations_tenant_created_idx ON automations (tenant_id, created_at DESC, id COLLATE "C" DESC);

-- One contact's run through one automation: the durable schedule of its next move, claimed by the
-- worker's automation runner with FOR UPDATE SKIP LOCKED and a lease (like sequence_enrollments).
CREATE TABLE automation_runs (
  tenant_id     text        NOT NULL,
  id            text        NOT NULL,                  -- run_ + 24 base62 characters
  automation_id text        NOT NULL,
  contact_id    text        NOT NULL,
  state         text        NOT NULL CHECK (state IN ('active', 'completed', 'stopped')),
  stop_reason   text,                                  -- unsubscribed | suppressed | erased (stopped)
  position      text,                                  -- path of the current step ('1', '1.else.0'); NULL once over
  waiting       text        CHECK (waiting IN ('delay', 'event')), -- what the step at position waits for; NULL: due to run
  wait_event    text,                                  -- the event a waitFor waits for
  wait_since    timestamptz,                           -- events from then on end the wait
  wait_arrived  boolean     NOT NULL DEFAULT false,    -- the awaited event came (set by the trigger inbox)
  due_at        timestamptz,                           -- when the runner next looks at it; NULL once over
  steps_done    int         NOT NULL DEFAULT 0,
  lease_owner   text,
  lease_until   timestamptz,
  started_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, automation_id) REFERENCES automations (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX automation_runs_due_idx ON automation_runs (due_at) WHERE state = 'active';
-- One active run per contact and automation: a trigger while one runs starts nothing.
CREATE UNIQUE INDEX automation_runs_active_idx
  ON automation_runs (tenant_id, automation_id, contact_id) WHERE state = 'active';
CREATE INDEX automation_runs_waiting_idx
  ON automation_runs (tenant_id, contact_id, wait_event) WHERE state = 'active' AND waiting = 'event';
CREATE INDEX automation_runs_list_idx ON automation_runs (tenant_id, automation_id, started_at DESC, id);

-- Each step a run did, once: the primary key is the exactly-once guard, written in the
-- transaction that moves the run past the step (with the step's own effect).
CREATE TABLE automation_run_steps (
  tenant_id  text        NOT NULL,
  run_id     text        NOT NULL,
  path       text        NOT NULL,                     -- the step's position
  kind       text        NOT NULL,                     -- delay | send | waitFor | if | update
  outcome    text,                                     -- waitFor: arrived | timeout; if: then | else; send: queued | skipped
  email_id   text,                                     -- send: the email's id (derived from tenant, run, path)
  done_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, run_id, path)
);

-- The trigger inbox: events that may start runs or end waits — contact changes (written with the
-- change), custom events (POST /events/track) and the event stream's delivery events (copied by
-- the runner's follower). Claimed with a lease, deleted once handled (in the same transaction).
CREATE TABLE automation_inbox (
  tenant_id   text        NOT NULL,
  id          text        NOT NULL,                    -- the event's id (stream event id, evt_…, cev_…)
  name        text        NOT NULL,                    -- event type or custom name
  contact_id  text        NOT NULL,
  occurred_at timestamptz NOT NULL,
  lease_owner text,
  lease_until timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX automation_inbox_due_idx ON automation_inbox (occurred_at);

-- The follower's place in each tenant's event stream (SPEC §25): the last seq copied to the inbox.
CREATE TABLE automation_stream_cursors (
  tenant_id  text   PRIMARY KEY,
  last_seq   bigint NOT NULL
);
