-- A daily aggregate projection of email_dims_v1 for /analytics/deliverability (SPEC §26, issue 44):
-- per (tenant, UTC day, provider, delivery seconds) the sums the endpoint reads. Its exact
-- quantiles read every (provider, seconds) row of the tenant's range: for a tenant with a million
-- emails, a million rows in the table or in an hourly projection (delivery seconds vary too much
-- for an hour to fold many), a few thousand a day here. The read (packages/read-models
-- breakdown-queries.ts) takes the UTC days wholly inside the asked local range from here and the
-- hours at its ends (a zone off UTC) from the 15-minute rows: the same answers. Kept with the
-- table's parts as the hourly projections are (migration 0032's settings); a reprojection's
-- version gets it with `CREATE TABLE … AS`.
ALTER TABLE email_dims_v1
    ADD PROJECTION IF NOT EXISTS by_day_provider_seconds
        (SELECT tenant_id, toStartOfDay(bucket), mailbox_provider, delivery_seconds, sum(total), sum(sent),
                sum(delivered), sum(bounced), sum(complained), sum(delayed)
         GROUP BY tenant_id, toStartOfDay(bucket), mailbox_provider, delivery_seconds);

-- Rows written before this migration (an upgrade): built in the background.
ALTER TABLE email_dims_v1 MATERIALIZE PROJECTION by_day_provider_seconds;
