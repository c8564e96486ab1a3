-- A webhook delivery's claim writes a column no index holds (issue 45 item 2: Postgres work per
-- email). Owner: packages/webhooks/src/deliveries.ts. Never edit an applied file: add a new one.

-- Until now the dispatcher's claim pushed `next_attempt_at` one lease ahead. That column is in the
-- due index, so every claim was a non-HOT update: a whole new version of the row (the event and its
-- body, ≈ 1 kB) logged on another page, and a new entry in each of the table's six indexes.
-- The claim now sets `lease_until` instead: a claimed delivery is not due until its lease ends; the
-- attempt's outcome (or a postponement) sets it back to NULL. With room left on each page
-- (fillfactor 70: new pages only, no rewrite) the claim and the body's fixing are HOT updates on the
-- same page, logged as the bytes that changed. A delivery claimed before this migration carries its
-- lease in `next_attempt_at` as before and is due again when it ends.
ALTER TABLE webhook_deliveries ADD COLUMN lease_until timestamptz;
ALTER TABLE webhook_deliveries SET (fillfactor = 70);
