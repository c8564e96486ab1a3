-- Retention deletes old content everywhere (SPEC §9, §14; services/api/src/retention-job.ts).
-- Never edit an applied file: add a new one instead.
-- The job deletes an expired email's rows in every table that holds its content in the statement
-- that deletes its log row, by (tenant_id, email id): the primary keys of email_events,
-- outgoing_emails and sandbox_messages serve that; webhook_deliveries needs the first index below.
-- It then sweeps, per tenant, the rows older than the tenant's cut-off whose log row is already
-- gone (left by the job before this migration, or an event that came after its email was
-- deleted): the `_created`/`_occurred` indexes make that sweep, and the loose scan that finds the
-- tenants, a range of an index instead of a walk of the table. Cost: one more index entry per
-- timeline event the projector writes, per finished send, per sandbox message and two per
-- webhook delivery.

-- The deliveries of an email (the rows the job deletes with its log row).
CREATE INDEX webhook_deliveries_email_idx ON webhook_deliveries (tenant_id, email_id);

-- Sends the sender is not finished with: an expired email keeps its rows while its send is one
-- (a scheduled send falls due up to 30 days after its email's createdAt). Only those rows are in
-- it, so checking the emails of a batch against it stays small whatever the tenant has sent.
CREATE INDEX outgoing_emails_unfinished_idx
  ON outgoing_emails (tenant_id, id)
  WHERE state NOT IN ('done', 'cancelled');

-- The sweep's ranges: a tenant's rows older than its cut-off, on the column that dates each row.
CREATE INDEX email_events_tenant_occurred_idx
  ON email_events (tenant_id, occurred_at);                  -- the event's occurredAt
CREATE INDEX outgoing_emails_final_created_idx
  ON outgoing_emails (tenant_id, created_at)                 -- the queued time (= the email's createdAt)
  WHERE state IN ('done', 'cancelled');                      -- only sends the sender is finished with
CREATE INDEX sandbox_messages_tenant_created_idx
  ON sandbox_messages (tenant_id, created_at);               -- when the sandbox took the message
CREATE INDEX webhook_deliveries_finished_created_idx
  ON webhook_deliveries (tenant_id, created_at)              -- when the dispatcher made the delivery
  WHERE status <> 'pending';                                 -- a pending one is still the dispatcher's
