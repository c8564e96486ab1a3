-- Campaign email ids that start with the campaign's start time (issue 45 item 2: WAL per email).
-- Owner: packages/bulk/src/campaigns/store.ts. Never edit an applied file: add a new one.
--
-- A campaign's email id is derived from (tenant, campaign, contact), so a chunk done twice after a
-- crash hands over the same ids and nothing is sent twice. Derived as 32 hex characters of a
-- hash, the ids land on random leaves of every index keyed by email id: on a tenant with a million
-- emails, 11 indexes wrote 4–5 kB of full-page images each per campaign email (`npm run bench --
-- pgwork` with BENCH_PGWORK_HISTORY). Campaigns made from now on derive `em_` + the time part of a
-- ULID for `snapshot_at` (fixed at the first claim) + 20 hex characters of the same hash: still the
-- same ids on every redo, and each campaign's ids sort after what the tenant sent before it.
--
-- A campaign made before this migration keeps the ids it may already have handed over (false), so
-- a fan-out under way when the upgrade lands derives the same ids after it. Metadata only; no
-- rewrite.
ALTER TABLE campaigns ADD COLUMN ordered_ids boolean NOT NULL DEFAULT false;
ALTER TABLE campaigns ALTER COLUMN ordered_ids SET DEFAULT true;
