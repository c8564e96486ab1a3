-- Contacts and audiences (SPEC §14). Audiences are names on the contact (what Resend calls
-- audiences), not a table of their own: a contact is in audience X iff X is in its list.
-- Never edit an applied file: add a new one instead.

CREATE TABLE contacts (
  tenant_id       text        NOT NULL,                     -- owner tenant; every query is scoped by it
  id              text        NOT NULL,                     -- ct_ + 24 base62 characters
  email           text        NOT NULL                      -- the address, stored lowercased:
                  CHECK (email = lower(email)),             -- one contact per address and tenant
  first_name      text,                                     -- NULL = not given
  last_name       text,                                     -- NULL = not given
  attributes      jsonb       NOT NULL DEFAULT '{}',        -- free key → string/number/boolean/null
  subscribed      boolean     NOT NULL DEFAULT true,        -- false once unsubscribed: no bulk mail
  unsubscribed_at timestamptz,                              -- when it last became false; NULL while subscribed
  audiences       text[]      NOT NULL DEFAULT '{}',        -- audience names, unique, in given order
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, email)                                 -- the 409 of a second POST; import upserts on it
);

-- The contact list: newest first, tiebreak id in byte order (like the delivery log).
CREATE INDEX contacts_tenant_created_idx ON contacts (tenant_id, created_at DESC, id COLLATE "C" DESC);
-- `?audience=` filters and audience counts (`audiences @> ARRAY[name]`).
CREATE INDEX contacts_audiences_idx ON contacts USING gin (audiences);
