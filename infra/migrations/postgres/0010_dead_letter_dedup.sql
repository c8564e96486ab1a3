-- A dead letter is written once however often its record is redelivered (issue 9): a batch
-- retried after a ClickHouse or connection failure, or a record met again after a crash,
-- inserts the same (source, payload) again, which now changes nothing.
ALTER TABLE dead_letters ADD COLUMN payload_hash text;  -- SHA-256 hex of payload; NULL on rows
                                                         -- written before this migration
CREATE UNIQUE INDEX dead_letters_source_payload_hash_key ON dead_letters (source, payload_hash);
