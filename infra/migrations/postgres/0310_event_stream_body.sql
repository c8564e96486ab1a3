-- The event stream's list pages as concatenated text (issue 42): each event's JSON exactly as
-- `GET /events` and the SSE tail send it (`{"id","cursor","type","timestamp","data"}`), written
-- once by the projector, so that a page of 1 000 events is `string_agg` of stored text instead of
-- 1 000 jsonb values rebuilt and printed per read. NULL (rows from before this migration, and rows
-- an erasure rewrote): the reads print `payload` plus the cursor as before.
ALTER TABLE event_stream ADD COLUMN body text;
