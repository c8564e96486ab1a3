-- email_project_daily_v1: the analytics counters of SPEC §6 per tenant, project, day and template,
-- for `/analytics/*?projectId=` (SPEC §16).
--
-- A separate table beside email_daily_v2 (not a v3 of it): the rollup without a project stays
-- as small and as fast as it was, and this one only holds emails that name a project. Rows are
-- the same signed deltas as email_daily_v2's (docs/architecture.md "Exactly-once effect"): the
-- projector ships, from the same outbox row, the deltas with a projectId here, with the same
-- insert_deduplication_token (tokens are per table), so a re-shipped batch counts once here too.
-- An email moved to another project by an earlier email.queued gives −old and +new rows.
--
-- Nothing to carry over: before this table existed no event could name a project.
CREATE TABLE IF NOT EXISTS email_project_daily_v1
(
    tenant_id   String COMMENT 'owner tenant; first key column, every query filters on it',
    project_id  String COMMENT 'projectId of the email (email.queued data.projectId); never empty here',
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
ORDER BY (tenant_id, project_id, day, template_id)
SETTINGS non_replicated_deduplication_window = 10000
COMMENT 'Signed analytics deltas of emails with a project, summed per (tenant, project, day, template); read with sum()';
