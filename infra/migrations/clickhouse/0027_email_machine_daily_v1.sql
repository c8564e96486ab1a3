-- email_machine_daily_v1: emails opened by a machine (Apple Mail Privacy Protection, security
-- scanners; SPEC §21), per tenant, day and project, for `totals.machineOpened` of
-- `/analytics/summary`.
--
-- A table beside email_daily_v2 and email_project_daily_v1 (not a v3 of them): their shape stays,
-- and only emails a machine opened have a row here. Rows are the same signed deltas (docs/
-- architecture.md "Exactly-once effect"), shipped from the same outbox row with the same
-- insert_deduplication_token (tokens are per table), so a re-shipped batch counts once here too.
-- project_id is '' for an email without a project: the tenant's total sums every project_id.
--
-- Nothing to carry over: before this table no event was a machine open.
CREATE TABLE IF NOT EXISTS email_machine_daily_v1
(
    tenant_id      String COMMENT 'owner tenant; first key column, every query filters on it',
    day            Date   COMMENT 'UTC date of the email createdAt (its email.queued occurredAt)',
    project_id     String COMMENT 'projectId of the email, empty string when it has none',
    machine_opened Int64  COMMENT 'delta of emails opened at least once by a machine (email.opened machine: true)'
)
ENGINE = SummingMergeTree((machine_opened))
PARTITION BY toYYYYMM(day)
ORDER BY (tenant_id, day, project_id)
SETTINGS non_replicated_deduplication_window = 10000
COMMENT 'Signed deltas of machine-opened emails per (tenant, day, project); read with sum()';
