-- Projects (SPEC §16) and the lists of templates and suppressions (SPEC §12, §13).
-- Never edit an applied file: add a new one instead (this branch owns 0020–0029).

-- A tenant's projects: emails may name one (email.queued data.projectId), API keys may be bound to one.
CREATE TABLE projects (
  tenant_id  text        NOT NULL,                   -- owner tenant; every query is scoped by it
  id         text        NOT NULL,                   -- prj_ + 24 base62
  name       text        NOT NULL,                   -- display name (1..100 chars)
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),     -- last rename
  PRIMARY KEY (tenant_id, id)
);
-- The list order (newest first).
CREATE INDEX projects_tenant_created_idx ON projects (tenant_id, created_at DESC, id DESC);

-- The project of each email, from its defining email.queued (the fold); NULL = none.
ALTER TABLE email_logs ADD COLUMN project_id text;
-- Serves GET /emails/logs?projectId= (newest first within a project), a project-bound key's
-- reads, and the "project has emails" check of DELETE /projects/:id.
CREATE INDEX email_logs_tenant_project_created_idx
  ON email_logs (tenant_id, project_id, created_at DESC, id DESC)
  WHERE created_at IS NOT NULL AND project_id IS NOT NULL;

-- A key created with projectId sends and reads only within that project; NULL = every project.
ALTER TABLE api_keys ADD COLUMN project_id text;

-- List orders (newest first) of templates and suppressions.
CREATE INDEX templates_tenant_created_idx ON templates (tenant_id, created_at DESC, id DESC);
CREATE INDEX suppressions_tenant_created_idx ON suppressions (tenant_id, created_at DESC, email DESC);
