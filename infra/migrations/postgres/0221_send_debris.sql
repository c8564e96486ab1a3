-- Issue 49, item 2: a send request killed between writing its `outgoing_emails` rows and
-- answering leaves no debris and no key stuck "in progress".
-- `idempotency_keys.planned`: the answer the request will give (its status, body and email ids),
-- stored before its rows are written. A retry that finds the key unanswered looks at those rows:
-- one the sender has moved past `awaiting_log` means the log holds its email.queued, and the
-- planned answer becomes the key's answer; none left means nothing was accepted, and the retry
-- runs (services/api src/emails/idempotency.ts).
-- The partial index: the sender's sweep of rows left `awaiting_log` by a request that died
-- (packages/sending src/due-list-store.ts, `sweepUnqueuedSends`).
-- Never edit an applied file: add a new one instead.

ALTER TABLE idempotency_keys ADD COLUMN planned jsonb; -- {statusCode, body, emailIds}; NULL before the request writes rows

CREATE INDEX outgoing_emails_awaiting_idx ON outgoing_emails (updated_at) WHERE state = 'awaiting_log';
