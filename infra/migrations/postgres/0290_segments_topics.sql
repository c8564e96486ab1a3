-- Contact properties, segments, topics and the recipients' engagement rollup (SPEC §27, issue 47).
-- Never edit an applied file: add a new one instead.

-- Typed property definitions of a tenant; a contact's values sit in contacts.properties.
CREATE TABLE contact_properties (
  tenant_id  text        NOT NULL,
  name       text        NOT NULL,                       -- key in contacts.properties
  type       text        NOT NULL CHECK (type IN ('string', 'number', 'boolean', 'date')),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, name)
);

-- Values of the defined properties: name → string | number | boolean (a date as an ISO 8601
-- string in UTC, `…Z`, so jsonb order is time order). Checked against the definitions on write.
ALTER TABLE contacts ADD COLUMN properties jsonb NOT NULL DEFAULT '{}';
-- The contact's own topic choices: topic id → 'opt_in' | 'opt_out'; absent = the topic's default.
ALTER TABLE contacts ADD COLUMN topics jsonb NOT NULL DEFAULT '{}';

-- Topics: what a contact may subscribe to or leave without leaving everything.
CREATE TABLE topics (
  tenant_id            text        NOT NULL,
  id                   text        NOT NULL,           -- top_ + 24 base62 characters
  name                 text        NOT NULL,           -- display name, 1..100
  default_subscription text        NOT NULL CHECK (default_subscription IN ('opt_in', 'opt_out')),
  public               boolean     NOT NULL,           -- shown on the preference page
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX topics_tenant_created_idx ON topics (tenant_id, created_at DESC, id COLLATE "C" DESC);

-- Segments: a named filter (packages/bulk/src/segments/filter.ts), evaluated when read.
CREATE TABLE segments (
  tenant_id  text        NOT NULL,
  id         text        NOT NULL,                     -- seg_ + 24 base62 characters
  name       text        NOT NULL,
  filter     jsonb       NOT NULL,                     -- a SegmentFilter, validated on write
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX segments_tenant_created_idx ON segments (tenant_id, created_at DESC, id COLLATE "C" DESC);

-- A campaign goes to an audience or to a segment (its filter copied at the first claim, so the
-- fan-out evaluates one filter from its start to its end), and may name a topic.
ALTER TABLE campaigns ALTER COLUMN audience DROP NOT NULL;
ALTER TABLE campaigns ADD COLUMN segment_id text;                 -- NULL = the audience
ALTER TABLE campaigns ADD COLUMN segment_filter jsonb;            -- the segment's filter at the claim
ALTER TABLE campaigns ADD COLUMN topic_id text;                   -- NULL = every subscribed contact
ALTER TABLE campaigns ADD CONSTRAINT campaigns_target_check CHECK ((audience IS NULL) <> (segment_id IS NULL));
ALTER TABLE sequences ADD COLUMN topic_id text;                   -- NULL = every subscribed contact

-- The projector's per-recipient engagement (packages/read-models/src/engagement.ts): when an
-- address last received, opened, clicked and bounced. Segments read one index range per clause.
CREATE TABLE recipient_engagement (
  tenant_id        text        NOT NULL,
  email            text        NOT NULL,              -- lowercased address (erasure deletes the row)
  last_received_at timestamptz,                       -- latest email.delivered
  last_opened_at   timestamptz,                       -- latest human email.opened
  last_clicked_at  timestamptz,                       -- latest email.clicked
  last_bounced_at  timestamptz,                       -- latest email.bounced
  PRIMARY KEY (tenant_id, email)
);
CREATE INDEX recipient_engagement_received_idx ON recipient_engagement (tenant_id, last_received_at);
CREATE INDEX recipient_engagement_opened_idx ON recipient_engagement (tenant_id, last_opened_at);
CREATE INDEX recipient_engagement_clicked_idx ON recipient_engagement (tenant_id, last_clicked_at);
CREATE INDEX recipient_engagement_bounced_idx ON recipient_engagement (tenant_id, last_bounced_at);

-- The tags of the mail each address got (a segment's `{ tag }`).
CREATE TABLE recipient_tags (
  tenant_id text        NOT NULL,
  tag       text        NOT NULL,
  email     text        NOT NULL,                       -- lowercased address
  last_at   timestamptz NOT NULL,                       -- latest email.queued with the tag
  PRIMARY KEY (tenant_id, tag, email)
);
CREATE INDEX recipient_tags_email_idx ON recipient_tags (tenant_id, email);
