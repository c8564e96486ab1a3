-- Automation send-step email ids that start with the step's due time (issue 45 item 2).
-- Owner: packages/bulk/src/automations/. Never edit an applied file: add a new one.
--
-- A send step's email id is derived from (tenant, run, position), so a step redone after a crash
-- hands over the same id (migration 0540 says why a hash alone costs WAL). Runs made from now on
-- derive `em_` + the time part of a ULID for the run's `due_at` at that position (written with
-- `position` in one statement; only a wait for an event moves it, never a send step) + 20 hex
-- characters of the same hash.
--
-- A run made before this migration keeps hashed ids (false): a send redone across the upgrade gets
-- the id it had. Metadata only; no rewrite.
ALTER TABLE automation_runs ADD COLUMN ordered_ids boolean NOT NULL DEFAULT false;
ALTER TABLE automation_runs ALTER COLUMN ordered_ids SET DEFAULT true;
