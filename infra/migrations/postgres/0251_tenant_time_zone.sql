-- The tenant's time zone (SPEC §26): the days and hours of /analytics/breakdown and
-- /analytics/deliverability are its. An IANA name (checked by the api with Intl); NULL = UTC.
-- Owner: packages/tenant-settings. Never edit an applied file: add a new one.

ALTER TABLE tenant_settings
  ADD COLUMN time_zone text; -- IANA time zone name, e.g. Europe/Paris; NULL means UTC
