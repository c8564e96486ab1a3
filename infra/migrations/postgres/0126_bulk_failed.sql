-- Issue 24, item 3: a recipient whose message cannot be composed (what the send path would
-- refuse) is skipped and counted, instead of failing the fan-out's chunk for everyone. Its
-- `bulk_emails` row says why; no email exists under its id.
ALTER TABLE bulk_emails ADD COLUMN failed_reason text;
