-- Sequence step email ids that start with the step's due time (issue 45 item 2: WAL per email).
-- Owner: packages/bulk/src/sequences/. Never edit an applied file: add a new one.
--
-- A step's email id is derived from (tenant, sequence, enrollment, step), so a step done twice
-- after a crash hands over the same id and nothing is sent twice. As 32 hex characters of a hash
-- the ids land on random leaves of every index keyed by email id (migration 0530 says what that
-- costs). Enrollments made from now on derive `em_` + the time part of a ULID for the step's
-- `next_due_at` (written with `next_step` in one statement and left alone until the step is done,
-- so every redo of the step reads the same) + 20 hex characters of the same hash.
--
-- An enrollment made before this migration keeps hashed ids (false): a step sent just before the
-- upgrade and redone after it gets the id it had. Metadata only; no rewrite.
ALTER TABLE sequence_enrollments ADD COLUMN ordered_ids boolean NOT NULL DEFAULT false;
ALTER TABLE sequence_enrollments ALTER COLUMN ordered_ids SET DEFAULT true;
