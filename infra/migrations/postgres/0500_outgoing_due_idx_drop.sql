-- One index fewer on the send rows (issue 45 item 2: Postgres work per email). Owner:
-- packages/sending/src/due-list-store.ts. Never edit an applied file: add a new one instead.

-- `outgoing_emails_due_idx (due_at) WHERE state = 'pending'` (0030) served the claim's scan until
-- 0105 gave it `outgoing_emails_claim_idx (bulk, due_at)` with the same predicate, the claim's own
-- order. No statement has read it since, yet every row that becomes pending (once per email, again
-- per retry) wrote an entry in it. Metadata only; no rewrite.
DROP INDEX IF EXISTS outgoing_emails_due_idx;
