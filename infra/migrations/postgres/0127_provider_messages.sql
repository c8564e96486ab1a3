-- The message ids a delivery notification may name (SPEC §21): the Message-ID Tern set and the
-- relay's own id, both from `email.sent`. Written only by the projector (services/projector
-- src/pg-sink.ts), in the transaction that folds the `email.sent`; read by the provider routes
-- (services/api src/providers/store.ts) to find the email a notification is about.
-- The same id in two tenants is kept twice: the routes apply a notification only to an id that
-- names exactly one email. Never edit an applied file: add a new one instead.

CREATE TABLE provider_messages (
  message_id text NOT NULL,  -- the id without its angle brackets (`em_x@host`, an SES or Postmark id)
  tenant_id  text NOT NULL,  -- owner tenant of the email
  email_id   text NOT NULL,  -- the email (email_logs.id)
  sent_at    timestamptz NOT NULL, -- occurredAt of the email.sent: the retention job's sweep of rows left by deleted emails
  PRIMARY KEY (message_id, tenant_id, email_id)
);

-- The retention job (services/api src/retention-job.ts) deletes by email, and sweeps by age.
CREATE INDEX provider_messages_email ON provider_messages (tenant_id, email_id);
CREATE INDEX provider_messages_age ON provider_messages (tenant_id, sent_at);
