-- The sender's outbox of outcomes (issue 49, item 1): the events of a finished attempt
-- (email.sent, delayed, bounced, failed, suppressed…), written in the same statement that marks
-- its `outgoing_emails` row done or due again (packages/sending src/due-list-store.ts,
-- `finishSends`), and deleted once they are in the log. A log outage then delays outcomes and
-- never repeats a send: the row is no longer `sending`, so no lease lapses and nothing claims it
-- again; the sender appends what is left here when the log is back (`pendingOutcomes`). The
-- events' ids are derived from the email and the attempt, so an outcome appended twice (a crash
-- between the append and the delete) is a duplicate the consumers drop.
-- Never edit an applied file: add a new one instead.

CREATE TABLE send_outcomes (
  tenant_id  text NOT NULL,        -- owner tenant of the email
  email_id   text NOT NULL,        -- the email (outgoing_emails.id)
  attempt    integer NOT NULL,     -- outgoing_emails.attempts of the attempt these events end
  events     jsonb NOT NULL,       -- the attempt's DeliveryEvents, in the order they are appended
  created_at timestamptz NOT NULL, -- when the attempt finished: the relay takes the oldest first
  PRIMARY KEY (tenant_id, email_id, attempt)
);

CREATE INDEX send_outcomes_age ON send_outcomes (created_at);
