-- Issue 24, item 6: an Idempotency-Key is scoped by (tenant, project). Two keys bound to two
-- projects sending with the same key and body are two requests; before, the second got the
-- first's id (202, nothing sent) — an id it then could not read. '' = a credential bound to no
-- project (the tenant-wide scope).
ALTER TABLE idempotency_keys ADD COLUMN project_scope text NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (tenant_id, project_scope, key);
