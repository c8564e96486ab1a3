-- email_dims: what readers of the sliceable rollup query (packages/read-models breakdown-queries.ts).
-- A view over the serving version; `npm run reproject -- analytics` replaces it (CREATE OR REPLACE
-- VIEW: one atomic metadata swap) once the next version (email_dims_v2, …) is filled and caught up.
CREATE VIEW IF NOT EXISTS email_dims AS SELECT *, day FROM email_dims_v1;
