-- The event stream's retention goes by seq (issue 45 item 2: Postgres work per email). Owner:
-- packages/read-models/src/event-stream/. Never edit an applied file: add a new one instead.

-- `event_stream_time_idx (tenant_id, recorded_at)` (0230) served one statement, the retention
-- job's "events recorded before the cut-off", and every event wrote an entry in it (three per
-- email). `recorded_at` grows with `seq` in a tenant (a row is inserted under its tenant head's
-- lock, `clock_timestamp()` after the previous holder committed), so the expired events are the
-- first of the tenant's seq order and the primary key finds them (`expireEventStream`). The reads
-- already go by seq. Metadata only; no rewrite.
DROP INDEX IF EXISTS event_stream_time_idx;
