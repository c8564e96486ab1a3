-- Reprojection of the sliceable analytics rollup (SPEC §26, docs/analytics.md "Reprojection").
-- Owner: packages/read-models/src/daily-analytics.ts. Never edit an applied file: add a new one.
--
-- analytics_dims_targets: the one row naming the ClickHouse versions of the rollup the live
-- projector writes (email_dims_v1, …). The projector reads it FIRST in each batch's transaction
-- (holding ACCESS SHARE until commit); `npm run reproject -- analytics` changes it under ACCESS
-- EXCLUSIVE, so every batch is wholly before or wholly after the change.
CREATE TABLE analytics_dims_targets (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton), -- one row
  tables     text[]  NOT NULL,                                   -- ClickHouse tables each batch's deltas go to
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO analytics_dims_targets (tables) VALUES (ARRAY['email_dims_v1']);

-- The tables an outbox batch ships its dim_rows to, decided in its transaction; NULL (rows written
-- before this column) = email_dims_v1.
ALTER TABLE analytics_outbox ADD COLUMN dim_tables text[];

-- The order events were claimed into the timeline: a reprojection's cut is the last value taken
-- while no batch is in flight. Rows claimed before this column have NULL (= before every cut).
-- No default on ADD COLUMN, so the table is not rewritten.
CREATE SEQUENCE email_events_claim_seq;
ALTER TABLE email_events ADD COLUMN claim_seq bigint;
ALTER TABLE email_events ALTER COLUMN claim_seq SET DEFAULT nextval('email_events_claim_seq');
