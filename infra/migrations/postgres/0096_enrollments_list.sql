-- GET /sequences/:id/enrollments (the dashboard's list of a sequence's enrollments): newest first,
-- tie-break id in byte order, optionally of one state. Never edit an applied file: add a new one.
-- Replaces the (tenant_id, sequence_id) index: same leading columns, so it still serves the counts
-- by state of GET /sequences.
CREATE INDEX sequence_enrollments_list_idx
  ON sequence_enrollments (tenant_id, sequence_id, enrolled_at DESC, id COLLATE "C" DESC);
DROP INDEX IF EXISTS sequence_enrollments_sequence_idx;
