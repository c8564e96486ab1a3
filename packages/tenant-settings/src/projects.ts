import type { Project } from '@tern/contracts';
import { type PageQuery, pageWindow } from '@tern/contracts';
import { bindPool, type Page, type Repository, tenantRecords, withTransaction } from '@tern/kernel';
import { projectHasEmails } from '@tern/read-models';
import type pg from 'pg';

/** Projects in Postgres (`projects`, SPEC §16). */

type Row = { id: string; name: string; created_at: Date; updated_at: Date };

const toProject = (r: Row): Project => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
const PROJECTS = tenantRecords<Row, Project>({
  table: 'projects',
  columns: 'id, name, created_at, updated_at',
  map: toProject,
});

export async function insertProject(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  name: string,
  at: Date,
): Promise<Project> {
  const { rows } = await pool.query<Row>(
    `INSERT INTO projects (tenant_id, id, name, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     RETURNING id, name, created_at, updated_at`,
    [tenantId, id, name, at],
  );
  return toProject(rows[0]!);
}

export function getProject(pool: pg.Pool, tenantId: string, id: string): Promise<Project | null> {
  return PROJECTS.get(pool, tenantId, id);
}

/** One page, newest first; `only` narrows to one project (a project-bound key's view). */
export async function listProjects(
  pool: pg.Pool,
  tenantId: string,
  page: PageQuery,
  only: string | null = null,
): Promise<Page<Project>> {
  const { limit, offset } = pageWindow(page);
  const where = 'tenant_id = $1 AND ($2::text IS NULL OR id = $2)';
  const [count, list] = await Promise.all([
    pool.query<{ total: string }>(`SELECT count(*) AS total FROM projects WHERE ${where}`, [tenantId, only]),
    pool.query<Row>(
      `SELECT id, name, created_at, updated_at FROM projects
        WHERE ${where}
        ORDER BY created_at DESC, id COLLATE "C" DESC
        LIMIT $3 OFFSET $4::bigint`,
      [tenantId, only, limit, offset],
    ),
  ]);
  return { items: list.rows.map(toProject), total: Number(count.rows[0]?.total ?? 0) };
}

export async function renameProject(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  name: string,
  at: Date,
): Promise<Project | null> {
  const { rows } = await pool.query<Row>(
    `UPDATE projects SET name = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2
     RETURNING id, name, created_at, updated_at`,
    [tenantId, id, name, at],
  );
  return rows[0] ? toProject(rows[0]) : null;
}

/**
 * Deletes a project without emails: `not_found`, `has_emails` (nothing deleted), or `deleted`.
 * The check and the delete share a transaction that locks the project row.
 */
export async function deleteProject(
  pool: pg.Pool,
  tenantId: string,
  id: string,
): Promise<'deleted' | 'not_found' | 'has_emails'> {
  return withTransaction(pool, async (client) => {
    const locked = await client.query('SELECT 1 FROM projects WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [
      tenantId,
      id,
    ]);
    let outcome: 'deleted' | 'not_found' | 'has_emails' = 'not_found';
    if (locked.rows.length > 0) {
      outcome = (await projectHasEmails(client, tenantId, id)) ? 'has_emails' : 'deleted';
      if (outcome === 'deleted') {
        await client.query('DELETE FROM projects WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
      }
    }
    return outcome;
  });
}

const projectStatements = {
  insert: insertProject,
  get: getProject,
  list: listProjects,
  rename: renameProject,
  delete: deleteProject,
};

/** The projects repository: the functions above over one pool (the api's `/projects` routes). */
export type ProjectStore = Repository<typeof projectStatements>;

export function createProjectStore(pool: pg.Pool): ProjectStore {
  return bindPool(pool, projectStatements);
}
