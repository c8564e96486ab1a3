-- email_daily_v2: per tenant, day and template, the analytics counters of SPEC §6, summed.
--
-- Replaces email_daily_v1, whose rows kept their batch_id and had to be read with FINAL: the
-- table grew with every projector batch and `summary` took 427 ms at 10 M rows (bench/README.md).
--
-- Dedup strategy (docs/architecture.md "Exactly-once effect"):
--   * Rows are signed deltas: each projector batch computes, per email, the change of its
--     analytics contribution (new state minus old state) and ships one row per
--     (tenant_id, day, template_id). Counters may be negative. Merges sum rows of the same key,
--     so the table stays at about one row per (tenant, day, template).
--   * Duplicate events never reach this table: the projector folds an event id once
--     (Postgres processed_events, in the transaction that writes the outbox row).
--   * A batch shipped twice (crash between this insert and the outbox delete, or a retried
--     insert) carries insert_deduplication_token = its outbox batch_id: ClickHouse drops the
--     repeated block. non_replicated_deduplication_window keeps the last 10 000 tokens; a batch
--     is re-shipped at the latest when a projector restarts (before it consumes anything) or
--     when another projector sweeps outbox rows older than 10 s, far inside that window.
--   * Queries re-aggregate with sum() GROUP BY (merges are not awaited); never count() rows.
--
-- Versioned name: a change of shape is a new table, never an in-place ALTER.
CREATE TABLE IF NOT EXISTS email_daily_v2
(
    tenant_id   String COMMENT 'owner tenant; first key column, every query filters on it',
    day         Date   COMMENT 'UTC date of the email createdAt (its email.queued occurredAt)',
    template_id String COMMENT 'templateId of the email, empty string when it has none',
    total       Int64  COMMENT 'delta of queued emails',
    sent        Int64  COMMENT 'delta of emails with status SENT or DELIVERED',
    opened      Int64  COMMENT 'delta of emails opened at least once',
    clicked     Int64  COMMENT 'delta of emails clicked at least once',
    bounced     Int64  COMMENT 'delta of emails with status BOUNCED',
    complained  Int64  COMMENT 'delta of emails with at least one complaint',
    failed      Int64  COMMENT 'delta of emails with status FAILED'
)
ENGINE = SummingMergeTree((total, sent, opened, clicked, bounced, complained, failed))
PARTITION BY toYYYYMM(day)
ORDER BY (tenant_id, day, template_id)
SETTINGS non_replicated_deduplication_window = 10000
COMMENT 'Signed analytics deltas summed per (tenant, day, template); read with sum()';

-- Carry v1's figures over once (only while v2 is still empty), then retire v1.
INSERT INTO email_daily_v2
SELECT tenant_id, day, template_id, sum(total), sum(sent), sum(opened), sum(clicked), sum(bounced),
       sum(complained), sum(failed)
  FROM email_daily_v1 FINAL
 WHERE (SELECT count() FROM email_daily_v2) = 0
 GROUP BY tenant_id, day, template_id;

DROP TABLE IF EXISTS email_daily_v1;
