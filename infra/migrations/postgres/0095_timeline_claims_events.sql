-- The timeline is the projector's claim (issue 10): an event id is folded once per tenant (SPEC §5)
-- because its `email_events` row is inserted first in the batch's transaction (INSERT … ON
-- CONFLICT DO NOTHING RETURNING gives the fresh ids). This replaces the per-event row of
-- `processed_events`, which now holds only the ids of dead-lettered events (no timeline row).
-- An id is then remembered as long as its email's timeline is kept (the tenant's retention), not
-- only DEDUP_WINDOW_DAYS.

-- The same id under two emails of a tenant can only exist if a duplicate came after its claim was
-- pruned: keep one (the fold applied each once; what stays is the first email's row).
DELETE FROM email_events a
 USING email_events b
 WHERE a.tenant_id = b.tenant_id AND a.event_id = b.event_id AND a.email_id > b.email_id;

ALTER TABLE email_events DROP CONSTRAINT email_events_pkey;
ALTER TABLE email_events ADD PRIMARY KEY (tenant_id, event_id);   -- the claim: one row per event id
-- GET /emails/:id's timeline, erasure's scrub and retention's delete go by email.
CREATE INDEX email_events_email_idx ON email_events (tenant_id, email_id);
