-- Tenant resources shared by several services (SPEC §12, §13): template content for the sender's
-- rendering and the suppression list the sender checks and the projector fills.
-- Never edit an applied file: add a new one instead.

-- Template bodies (SPEC §12); name and subject are in 0001. NULL = the template has no such part.
ALTER TABLE templates ADD COLUMN html text;
ALTER TABLE templates ADD COLUMN text text;

-- The suppression list (SPEC §13): a recipient here is never handed to a provider (SPEC §11).
CREATE TABLE suppressions (
  tenant_id  text        NOT NULL,
  email      text        NOT NULL CHECK (email = lower(email)), -- compared lowercased
  reason     text,                                               -- free text, or hard_bounce /
                                                                 -- complaint / unsubscribed
  source     text        NOT NULL
             CHECK (source IN ('manual', 'bounce', 'complaint', 'unsubscribe')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, email)
);
