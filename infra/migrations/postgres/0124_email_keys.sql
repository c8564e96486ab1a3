-- Issue 24 item 2: every personal field of every event (a bounce's diagnostic, a clicked URL…)
-- is sealed under the data key of the email's recipient, not only email.queued's. Events after
-- email.queued name the email, not the recipient: this maps an email to the key its email.queued
-- was sealed under (keyed hash only, no address). Written with the key; deleted by erasure and by
-- retention with the key's month.
CREATE TABLE email_keys (
  tenant_id      text NOT NULL,
  email_id       text NOT NULL,
  recipient_hash text NOT NULL,                        -- as data_keys.recipient_hash
  period         text NOT NULL,                        -- as data_keys.period (the email.queued's month)
  PRIMARY KEY (tenant_id, email_id)
);
CREATE INDEX email_keys_recipient ON email_keys (tenant_id, recipient_hash);
CREATE INDEX email_keys_period ON email_keys (period);
