-- The event stream's revision (SPEC §25, issue 42; docs/architecture.md "The event stream").
-- Owner: packages/read-models/src/event-stream/. Never edit an applied file: add a new one.

-- Bumped in the same transaction as every erasure that rewrites a tenant's stored events (their
-- personal fields become null). A page is otherwise immutable once read: an api process may answer
-- it again from memory after checking, in one primary-key lookup, that the tenant's head, retention
-- mark and revision are those it was read at. A constant default: no table rewrite.
ALTER TABLE event_stream_heads ADD COLUMN revision bigint NOT NULL DEFAULT 0;
