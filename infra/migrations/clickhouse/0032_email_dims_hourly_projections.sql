-- Hourly aggregate projections of email_dims_v1, one per dimension (SPEC §26, issue 44: a
-- breakdown of a tenant with a million emails read a million rows; a projection answers it from
-- one row per hour and key). ClickHouse keeps each projection inside the parts of the table, so
-- an insert deduplicated by its token, a merge, a TRUNCATE and retention's lightweight DELETE
-- (rebuilt, per the settings below) treat table and projections as one: no second copy to keep in
-- step. The next version a reprojection makes (`AS` this one) copies them, with the settings.
--
-- The reads (packages/read-models breakdown-queries.ts) use them only when every bucket of the
-- asked range is in a whole-hour offset of the tenant's zone (UTC, Europe/Paris, America/New_York
-- …): a local day or hour is then a sum of UTC hours. Other zones (+05:30, +05:45) and filtered
-- breakdowns read the 15-minute rows, as before; the answers are the same either way.
ALTER TABLE email_dims_v1
    MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild', lightweight_mutation_projection_mode = 'rebuild';

ALTER TABLE email_dims_v1
    ADD PROJECTION IF NOT EXISTS by_hour_tag
        (SELECT tenant_id, toStartOfHour(bucket), tags, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), tags),
    ADD PROJECTION IF NOT EXISTS by_hour_template
        (SELECT tenant_id, toStartOfHour(bucket), template_id, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), template_id),
    ADD PROJECTION IF NOT EXISTS by_hour_project
        (SELECT tenant_id, toStartOfHour(bucket), project_id, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), project_id),
    ADD PROJECTION IF NOT EXISTS by_hour_campaign
        (SELECT tenant_id, toStartOfHour(bucket), campaign_id, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), campaign_id),
    ADD PROJECTION IF NOT EXISTS by_hour_domain
        (SELECT tenant_id, toStartOfHour(bucket), sending_domain, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), sending_domain),
    ADD PROJECTION IF NOT EXISTS by_hour_provider
        (SELECT tenant_id, toStartOfHour(bucket), mailbox_provider, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), mailbox_provider),
    ADD PROJECTION IF NOT EXISTS by_hour_client
        (SELECT tenant_id, toStartOfHour(bucket), client_family, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), client_family),
    ADD PROJECTION IF NOT EXISTS by_hour_device
        (SELECT tenant_id, toStartOfHour(bucket), device_type, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), device_type),
    ADD PROJECTION IF NOT EXISTS by_hour_bounce
        (SELECT tenant_id, toStartOfHour(bucket), bounce_category, sum(total), sum(sent), sum(delivered), sum(opened), sum(clicked), sum(bounced), sum(complained), sum(failed), sum(delayed)
         GROUP BY tenant_id, toStartOfHour(bucket), bounce_category);

-- Rows written before this migration (an upgrade): built in the background; until a part has
-- them, ClickHouse reads that part's rows.
ALTER TABLE email_dims_v1
    MATERIALIZE PROJECTION by_hour_tag, MATERIALIZE PROJECTION by_hour_template, MATERIALIZE PROJECTION by_hour_project,
    MATERIALIZE PROJECTION by_hour_campaign, MATERIALIZE PROJECTION by_hour_domain, MATERIALIZE PROJECTION by_hour_provider,
    MATERIALIZE PROJECTION by_hour_client, MATERIALIZE PROJECTION by_hour_device, MATERIALIZE PROJECTION by_hour_bounce;
