-- email_dims_v1_tags: the rows of email_dims_v1 once per tag, keyed by the tag first (SPEC §26,
-- issue 44). A breakdown filtered by a tag read every row of the tenant's range in email_dims_v1 to
-- test has(tags, …) (a tenant with a million emails: a million arrays); here the primary key
-- narrows it to that tag's rows. An email without tags has no row here, one with a tag twice one
-- row for it (as has(tags, …) counts it); `tags` stays (a `by=tag`
-- breakdown under a tag filter spreads each set over its tags). Written with email_dims_v1 by the
-- same ship (packages/read-models daily-analytics.ts), under the same insert deduplication token,
-- in this table's own window: a re-shipped batch is dropped here as there. Each version of the
-- sliceable rollup has its companion (`<version>_tags`, made by a reprojection with the version);
-- readers query the view `email_dim_tags`, swapped with `email_dims`.
CREATE TABLE IF NOT EXISTS email_dims_v1_tags
(
    tenant_id         String,
    bucket            DateTime('UTC'),
    day               Date MATERIALIZED toDate(bucket),
    tag               String COMMENT 'one tag of `tags`: the row is the email''s once per tag',
    template_id       String,
    project_id        String,
    campaign_id       String,
    sending_domain    String,
    mailbox_provider  LowCardinality(String),
    tags              Array(String),
    client_family     LowCardinality(String),
    device_type       LowCardinality(String),
    bounce_category   LowCardinality(String),
    delivery_seconds  UInt32,
    total             Int64,
    sent              Int64,
    delivered         Int64,
    opened            Int64,
    clicked           Int64,
    bounced           Int64,
    complained        Int64,
    failed            Int64,
    delayed           Int64
)
ENGINE = SummingMergeTree((total, sent, delivered, opened, clicked, bounced, complained, failed, delayed))
PARTITION BY toYYYYMM(bucket)
ORDER BY (tenant_id, tag, bucket, template_id, project_id, campaign_id, sending_domain, mailbox_provider, tags,
          client_family, device_type, bounce_category, delivery_seconds)
SETTINGS non_replicated_deduplication_window = 10000
COMMENT 'email_dims_v1 once per tag, keyed by (tenant, tag, bucket, …); read with sum()';

-- What email_dims_v1 already holds (an upgrade; migrations run before the projector ships).
-- Emptied first: a run cut short and applied again copies once.
TRUNCATE TABLE email_dims_v1_tags;

INSERT INTO email_dims_v1_tags (tenant_id, bucket, tag, template_id, project_id, campaign_id, sending_domain,
                                mailbox_provider, tags, client_family, device_type, bounce_category, delivery_seconds,
                                total, sent, delivered, opened, clicked, bounced, complained, failed, delayed)
SELECT tenant_id, bucket, tag, template_id, project_id, campaign_id, sending_domain, mailbox_provider, tags,
       client_family, device_type, bounce_category, delivery_seconds,
       total, sent, delivered, opened, clicked, bounced, complained, failed, delayed
  FROM email_dims_v1 ARRAY JOIN arrayDistinct(tags) AS tag;

CREATE VIEW IF NOT EXISTS email_dim_tags AS SELECT *, day FROM email_dims_v1_tags;
