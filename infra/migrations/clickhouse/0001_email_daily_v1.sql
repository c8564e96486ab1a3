-- email_daily_v1: per tenant, day and template, the analytics counters of SPEC §6.
--
-- Dedup strategy (docs/architecture.md "Exactly-once effect"):
--   * Rows are signed per-batch deltas: each projector batch computes, per email, the change of
--     its analytics contribution (new state minus old state) and ships one row per
--     (tenant_id, day, template_id) with the batch's batch_id. Counters may be negative.
--   * A re-shipped batch (crash between the insert and the outbox delete) carries the same
--     batch_id, hence the same sorting key, and collapses under ReplacingMergeTree + FINAL.
--   * The insert is also sent with insert_deduplication_token = batch_id, so the repeated block
--     is usually dropped at insert time already (non_replicated_deduplication_window below).
--   * Queries read `FROM email_daily_v1 FINAL` and re-aggregate with sum(); never count() rows.
--
-- Versioned name: a change of shape is a new table (email_daily_v2), never an in-place ALTER.
CREATE TABLE IF NOT EXISTS email_daily_v1
(
    tenant_id   String COMMENT 'owner tenant; first key column, every query filters on it',
    day         Date   COMMENT 'UTC date of the email createdAt (its email.queued occurredAt)',
    template_id String COMMENT 'templateId of the email, empty string when it has none',
    batch_id    String COMMENT 'projector batch that produced the delta (analytics_outbox.batch_id); makes a re-shipped batch collapse',
    total       Int64  COMMENT 'delta of queued emails',
    sent        Int64  COMMENT 'delta of emails with status SENT or DELIVERED',
    opened      Int64  COMMENT 'delta of emails opened at least once',
    clicked     Int64  COMMENT 'delta of emails clicked at least once',
    bounced     Int64  COMMENT 'delta of emails with status BOUNCED',
    complained  Int64  COMMENT 'delta of emails with at least one complaint',
    failed      Int64  COMMENT 'delta of emails with status FAILED'
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (tenant_id, day, template_id, batch_id)
SETTINGS non_replicated_deduplication_window = 1000
COMMENT 'Signed per-batch analytics deltas; read with FINAL and sum()';
