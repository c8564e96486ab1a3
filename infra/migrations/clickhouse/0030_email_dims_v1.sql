-- email_dims_v1: the sliceable analytics rollup (SPEC §26) behind /analytics/breakdown and
-- /analytics/deliverability. One row per combination of dimensions of an email, as signed deltas
-- (docs/architecture.md "Exactly-once effect", packages/domain analytics-dims.ts): an email's
-- changes telescope to its final contribution. Shipped from the analytics_outbox row's dim_rows
-- with the batch id as insert_deduplication_token, so a re-shipped batch counts once; merges are
-- never awaited, so every read re-aggregates with sum() (a replay can never double a figure that
-- way: duplicates are dropped at insert, never merged in).
--
-- Buckets are 15 minutes of UTC: every IANA offset is a whole number of quarter hours, so a
-- tenant's local days and hours are exact sums of buckets (toStartOfDay(bucket, tz)).
-- New versions get a new table (email_dims_v2, …) filled by `npm run reproject -- analytics`;
-- this one is never altered in place.
CREATE TABLE IF NOT EXISTS email_dims_v1
(
    tenant_id         String        COMMENT 'owner tenant; first key column, every query filters on it',
    bucket            DateTime('UTC') COMMENT 'start of the 15-minute UTC bucket of the email createdAt (its email.queued occurredAt)',
    day               Date MATERIALIZED toDate(bucket) COMMENT 'UTC day of bucket: what retention deletes by',
    template_id       String        COMMENT 'templateId of the email, empty string when it has none',
    project_id        String        COMMENT 'projectId of the email, empty string when it has none',
    campaign_id       String        COMMENT 'campaignId of campaign mail, empty string otherwise',
    sending_domain    String        COMMENT 'domain of the from address, lowercased; empty when unknown',
    mailbox_provider  LowCardinality(String) COMMENT 'recipient mailbox provider (gmail, microsoft_365, …, other) from the recipient domain and its MX hosts',
    tags              Array(String) COMMENT 'the email tags, sorted; a breakdown by tag counts an email once per tag',
    client_family     LowCardinality(String) COMMENT 'client of the first human open or click (Outlook, Apple Mail, Chrome, …); empty when none',
    device_type       LowCardinality(String) COMMENT 'device of the first human open or click: desktop, mobile, tablet, other; empty when none',
    bounce_category   LowCardinality(String) COMMENT 'category of the latest bounce of a BOUNCED email (unknown_user, mailbox_full, policy, spam_block, dns, reputation, other); empty otherwise',
    delivery_seconds  UInt32        COMMENT 'seconds from email.sent to email.delivered of a DELIVERED email; 0 otherwise',
    total             Int64 COMMENT 'delta of emails',
    sent              Int64 COMMENT 'delta of emails with status SENT or DELIVERED',
    delivered         Int64 COMMENT 'delta of emails with status DELIVERED',
    opened            Int64 COMMENT 'delta of emails opened by a person at least once',
    clicked           Int64 COMMENT 'delta of emails clicked by a person at least once',
    bounced           Int64 COMMENT 'delta of emails with status BOUNCED',
    complained        Int64 COMMENT 'delta of emails with at least one complaint',
    failed            Int64 COMMENT 'delta of emails with status FAILED',
    delayed           Int64 COMMENT 'delta of emails deferred at least once (email.delayed)'
)
ENGINE = SummingMergeTree((total, sent, delivered, opened, clicked, bounced, complained, failed, delayed))
PARTITION BY toYYYYMM(bucket)
ORDER BY (tenant_id, bucket, template_id, project_id, campaign_id, sending_domain, mailbox_provider, tags,
          client_family, device_type, bounce_category, delivery_seconds)
SETTINGS non_replicated_deduplication_window = 10000
COMMENT 'Signed deltas of emails per (tenant, 15-min bucket, dimensions); read with sum()';
