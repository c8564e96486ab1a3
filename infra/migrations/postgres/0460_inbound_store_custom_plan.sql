-- Inbound email (SPEC §24, issue 43): inbound_store (0440) plans its statements for each call's
-- values. PL/pgSQL caches a generic plan per connection; one made while the table was nearly
-- empty looked the dedup key up by scanning the tenant's whole index (`inbound_messages_tenant_idx`,
-- for its ORDER BY received_at) or the whole table, and kept doing so as the table grew: the
-- Postgres CPU of an arrival rose from 1.5 ms at 1 000 stored messages to 3.7 ms at 6 000 (the
-- inbound bench). A custom plan is made from the table's current size, so the dedup index is used
-- as soon as it pays. Owned by packages/inbound (docs/architecture.md). Never edit an applied file:
-- add a new one instead.
ALTER FUNCTION inbound_store(text, text, timestamptz, text, timestamptz, text, text[], text, integer, integer,
  jsonb, text, bytea, bytea, bytea, bytea, bytea, bytea, bytea, bytea, bytea, integer)
  SET plan_cache_mode = force_custom_plan;

-- Room on each page for the one update every row gets (`announced`, in no index), so it is a HOT
-- update: no new entry in the table's three indexes, no dead index entry for vacuum. A row's
-- large columns are in TOAST; the page holds ≈ 200 bytes a row, so half a page free costs little
-- (measured: 2 000 rows of 10 KB, 1 000 updated: 1 000 HOT at 50, 112 at 90). Pages written from
-- now on keep it.
ALTER TABLE inbound_messages SET (fillfactor = 50);
