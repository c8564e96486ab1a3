-- Automations can be switched off (SPEC §27, issue 47; docs/automations.md "Enable and disable").
-- Owner: packages/bulk/src/automations/. Never edit an applied file: add a new one.

-- false: the automation starts no run (its trigger is not written to the inbox, the inbox starts
-- none); runs already in flight go on to their end. Every existing automation stays on.
ALTER TABLE automations ADD COLUMN enabled boolean NOT NULL DEFAULT true;
