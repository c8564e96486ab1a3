-- Webhook replay from a cursor of the event stream (SPEC §25, issue 42): `POST /webhooks/:id/replay
-- { after }` re-delivers the stream's events after `after_seq` up to `through_seq` (the stream's
-- head, or the 10 000th matching event, when it was asked). A replay is either a time window
-- (`since`, `until`) or a cursor range (`after_seq`, `through_seq`).
-- Owner: packages/webhooks. Never edit an applied file: add a new one.

ALTER TABLE webhook_replays
  ALTER COLUMN since DROP NOT NULL,
  ALTER COLUMN until DROP NOT NULL,
  ADD COLUMN after_seq   bigint,  -- the cursor given: events strictly after it
  ADD COLUMN through_seq bigint,  -- the last cursor the replay covers (inclusive)
  ADD COLUMN has_more boolean NOT NULL DEFAULT false, -- stopped at the bound: more events follow through_seq
  ADD CONSTRAINT webhook_replays_window_or_cursor CHECK (
    (since IS NOT NULL AND until IS NOT NULL AND after_seq IS NULL AND through_seq IS NULL)
    OR (since IS NULL AND until IS NULL AND after_seq IS NOT NULL AND through_seq IS NOT NULL));

-- One unfinished cursor replay per endpoint and cursor: asking again while it is pending or running
-- answers the same replay (a retried request makes no second set of deliveries).
CREATE UNIQUE INDEX webhook_replays_cursor_idx ON webhook_replays (endpoint_id, after_seq)
  WHERE status <> 'done' AND after_seq IS NOT NULL;
