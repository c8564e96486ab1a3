-- The event stream holds each event once (issue 45 item 2: Postgres work per email).
-- Owner: packages/read-models/src/event-stream/. Never edit an applied file: add a new one.

-- Until now a row held its event twice: as `payload` (jsonb) and again as `body` (its text with the
-- cursor, migration 0310) — ≈ 700 bytes of every event's row and of its WAL written for nothing,
-- since the reads print `body`. New rows store `body` only; `payload` is written when an erasure
-- rewrites the event (its `body` becomes NULL then, as before). The event's JSON is
-- `COALESCE(payload, body::jsonb - 'cursor')` either way. Rows from before this migration keep both.
-- Metadata only: no rewrite, and the check is not run over existing rows (NOT VALID), only new ones.
ALTER TABLE event_stream ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE event_stream ADD CONSTRAINT event_stream_event_stored
  CHECK (payload IS NOT NULL OR body IS NOT NULL) NOT VALID;
