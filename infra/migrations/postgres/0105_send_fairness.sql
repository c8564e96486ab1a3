-- Sending fairness and limits (SPEC §23). Never edit an applied file: add a new one instead.

-- Campaign and sequence mail is bulk: the sender claims transactional mail (POST /emails/send|batch,
-- SMTP submission) of every tenant ahead of it, so one tenant's campaign never delays another
-- tenant's password reset by more than a claim round.
ALTER TABLE outgoing_emails ADD COLUMN bulk boolean NOT NULL DEFAULT false;
-- The due-list scan in claim order (transactional first, then by due time).
CREATE INDEX outgoing_emails_claim_idx ON outgoing_emails (bulk, due_at) WHERE state = 'pending';

-- The tenant's send rate (emails handed to the provider per second); NULL = the server default
-- (SEND_RATE_PER_SECOND; 0 there = unlimited).
ALTER TABLE tenant_settings ADD COLUMN send_rate_per_second int CHECK (send_rate_per_second > 0);

-- A campaign's pace: its emails fall due `60 000 / send_rate_per_minute` ms apart (NULL = at once).
-- next_due_at is when the next chunk's first email falls due; it moves with the fan-out cursor.
ALTER TABLE campaigns ADD COLUMN send_rate_per_minute int CHECK (send_rate_per_minute > 0);
ALTER TABLE campaigns ADD COLUMN next_due_at timestamptz;

-- Emails handed to the provider per tenant and second, shared by every sender instance: a sender
-- takes its share of the second's allowance in one statement; rows older than a minute are pruned.
CREATE TABLE send_rate_counters (
  tenant_id text        NOT NULL,
  second    timestamptz NOT NULL,                  -- the second (truncated) the sends belong to
  sent      int         NOT NULL,                  -- emails granted to senders in that second
  PRIMARY KEY (tenant_id, second)
);
