-- The sliceable analytics rollup's deltas (SPEC §26) travel in the same outbox row as the daily
-- rollup's, so one transaction of the projector writes both and one shipment (one dedup token per
-- table) moves both to ClickHouse. Rows written before this column read as no dimension deltas.
-- Owner: packages/read-models/src/daily-analytics.ts. Never edit an applied file: add a new one.

ALTER TABLE analytics_outbox
  ADD COLUMN dim_rows jsonb NOT NULL DEFAULT '[]'::jsonb; -- array of per (tenant, 15-min bucket, dimensions) deltas (packages/domain analytics-dims.ts)
