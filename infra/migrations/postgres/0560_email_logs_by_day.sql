-- The delivery log partitioned by day (issue 45 item 4). Owner: packages/read-models/src/email-log/.
-- Never edit an applied file: add a new one.
--
-- `email_logs` becomes a table partitioned by RANGE (id): an email id starts with the time it was
-- made (`idTime`, packages/kernel), so a day is the id range ['em_' + idTime(midnight UTC),
-- 'em_' + idTime(next midnight)) in byte order (docs/deploy.md, "A log partitioned by day"). The
-- table as it is becomes the DEFAULT partition, renamed `email_logs_default` with its indexes: no
-- row moves and no index is built (the parent's indexes have the same definitions, partial ones
-- included, so the DEFAULT's are attached to them). Day partitions are made ahead of their day by the retention
-- job (`ensureLogDays`), which drops a day once every email in it has expired
-- (`dropExpiredLogDays`); rows of a day with no partition (ids made before the time prefix, ids
-- posted from outside, the days before this migration) stay in the DEFAULT and are deleted row by
-- row, as before.
--
-- A unique key of a partitioned table must hold the partition key: (tenant_id, id) does. The key
-- uses the column's own collation (the server's C.UTF-8); `COLLATE "C"` in PARTITION BY would make
-- Postgres refuse the primary key. An index can no longer be made CONCURRENTLY on the parent: make
-- it `ON ONLY email_logs`, then on each partition, then attach each.
ALTER TABLE email_logs RENAME TO email_logs_default;
ALTER INDEX email_logs_pkey RENAME TO email_logs_default_pkey;
ALTER INDEX email_logs_tenant_order_idx RENAME TO email_logs_default_tenant_order_idx;
ALTER INDEX email_logs_tenant_status_order_idx RENAME TO email_logs_default_tenant_status_order_idx;
ALTER INDEX email_logs_tenant_project_created_idx RENAME TO email_logs_default_tenant_project_created_idx;

CREATE TABLE email_logs (LIKE email_logs_default INCLUDING ALL EXCLUDING INDEXES)
  PARTITION BY RANGE (id);
ALTER TABLE email_logs ADD CONSTRAINT email_logs_pkey PRIMARY KEY (tenant_id, id);
CREATE INDEX email_logs_tenant_order_idx
  ON email_logs (tenant_id, created_at DESC, id COLLATE "C" DESC)
  WHERE created_at IS NOT NULL;
CREATE INDEX email_logs_tenant_status_order_idx
  ON email_logs (tenant_id, status, created_at DESC, id COLLATE "C" DESC)
  WHERE created_at IS NOT NULL;
CREATE INDEX email_logs_tenant_project_created_idx
  ON email_logs (tenant_id, project_id, created_at DESC, id COLLATE "C" DESC) INCLUDE (status)
  WHERE created_at IS NOT NULL AND project_id IS NOT NULL;

ALTER TABLE email_logs ATTACH PARTITION email_logs_default DEFAULT;
