-- Delivery feedback (SPEC §21). Never edit an applied file: add a new one instead.

-- The bounce mailbox finds an email by the id its VERP address names (`b+<emailId>.<hmac>@…`),
-- without the tenant (the HMAC decides which tenant's email it is). Lower case: an MTA may fold
-- the case of a local part.
CREATE INDEX outgoing_emails_id_lower_idx ON outgoing_emails (lower(id));

-- Soft bounces per address (SPEC §21): three of one address within 7 days suppress it with reason
-- `soft_bounce`. Written by the projector in the batch's transaction, one row per email.bounced
-- { bounceType: "soft" } event (the event id makes a redelivered event one row); rows older than
-- the window are pruned by the projector's prune job.
CREATE TABLE soft_bounces (
  tenant_id   text        NOT NULL,                -- owner tenant
  email       text        NOT NULL,                -- the recipient, lower case (personal: erased with the address)
  event_id    text        NOT NULL,                -- the email.bounced event
  occurred_at timestamptz NOT NULL,                -- the event's occurredAt
  PRIMARY KEY (tenant_id, email, event_id)
);
CREATE INDEX soft_bounces_occurred_idx ON soft_bounces (occurred_at);
