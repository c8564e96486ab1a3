-- One index fewer on the send rows, again (issue 45 item 2: Postgres work per email). Owner:
-- packages/sending/src/erasure.ts (`sendNotFinalSql`). Never edit an applied file: add a new one.

-- `outgoing_emails_unfinished_idx (tenant_id, id) WHERE state NOT IN ('done', 'cancelled')` (0090)
-- answered the retention job's "is this email's send not final?" from an index of unfinished rows
-- only. Every update of a row on its way (awaiting_log → pending → sending, and each retry) is a new
-- row version, and each wrote an entry in it: 350-450 bytes of WAL per email, for a probe the
-- primary key answers as well (one index probe and the row's state, per expired email, whose row
-- the same statement then deletes when the send is final). Metadata only; no rewrite.
DROP INDEX IF EXISTS outgoing_emails_unfinished_idx;
