import { type PageQuery, pageWindow, type Template, type TemplateSummary } from '@tern/contracts';
import { bindPool, deleteTenantRow, type Page, type Repository, tenantRecords } from '@tern/kernel';
import type pg from 'pg';

/**
 * Templates in Postgres (`templates`, SPEC §12), the table's one owner: plain functions of a pool
 * (or a client) and the tenant id, no HTTP here. Every statement names the tenant, so another
 * tenant's id is simply not found. The api's `/templates` routes, its analytics (names), the
 * campaign and sequence routes of packages/bulk (`templateExists`), the sender (`getTemplate`) and
 * the worker's bulk mail (`templateContent`) all call these.
 */

type Queryable = Pick<pg.Pool, 'query'>;

type Row = {
  id: string;
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
  created_at: Date;
  updated_at: Date;
};

const COLUMNS = 'id, name, subject, html, text, created_at, updated_at';

const toTemplate = (r: Row): Template => ({
  id: r.id,
  name: r.name,
  subject: r.subject,
  html: r.html,
  text: r.text,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
const TEMPLATES = tenantRecords<Row, Template>({ table: 'templates', columns: COLUMNS, map: toTemplate });

/** The list's summaries: the templates without their content. */
const SUMMARIES = tenantRecords<Omit<Row, 'html' | 'text'>, TemplateSummary>({
  table: 'templates',
  columns: 'id, name, subject, created_at, updated_at',
  map: (r) => ({
    id: r.id,
    name: r.name,
    subject: r.subject,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  }),
});

export interface TemplateContentInput {
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
}

/** Inserts a template; null when the tenant already has one with that id. */
export async function insertTemplate(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  input: TemplateContentInput,
  at: Date,
): Promise<Template | null> {
  const { rows } = await pool.query<Row>(
    `INSERT INTO templates (tenant_id, id, name, subject, html, text, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     ON CONFLICT (tenant_id, id) DO NOTHING
     RETURNING ${COLUMNS}`,
    [tenantId, id, input.name, input.subject, input.html, input.text, at],
  );
  return rows[0] ? toTemplate(rows[0]) : null;
}

/** Replaces name, subject and content; null when the tenant has no such template. */
export async function replaceTemplate(
  pool: pg.Pool,
  tenantId: string,
  id: string,
  input: TemplateContentInput,
  at: Date,
): Promise<Template | null> {
  const { rows } = await pool.query<Row>(
    `UPDATE templates SET name = $3, subject = $4, html = $5, text = $6, updated_at = $7
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [tenantId, id, input.name, input.subject, input.html, input.text, at],
  );
  return rows[0] ? toTemplate(rows[0]) : null;
}

/** The template with its content, or null. The sender renders what this returns. */
export function getTemplate(pool: pg.Pool, tenantId: string, id: string): Promise<Template | null> {
  return TEMPLATES.get(pool, tenantId, id);
}

/** One page, newest first (`created_at DESC, id DESC`), without content; and the tenant's total. */
export function listTemplates(
  pool: pg.Pool,
  tenantId: string,
  page: PageQuery,
): Promise<Page<TemplateSummary>> {
  return SUMMARIES.newestFirst(pool, tenantId, pageWindow(page));
}

/** False when the tenant has no such template. Its analytics stay (ClickHouse keeps the id). */
export function deleteTemplate(pool: pg.Pool, tenantId: string, id: string): Promise<boolean> {
  return deleteTenantRow(pool, 'templates', tenantId, id);
}

/** Names and subjects of the tenant's known templates among `ids`. */
export async function templateNames(
  pool: pg.Pool,
  tenantId: string,
  ids: readonly string[],
): Promise<Map<string, { name: string; subject: string }>> {
  if (ids.length === 0) return new Map();
  const { rows } = await pool.query<{ id: string; name: string; subject: string }>(
    'SELECT id, name, subject FROM templates WHERE tenant_id = $1 AND id = ANY($2::text[])',
    [tenantId, ids],
  );
  return new Map(rows.map((r) => [r.id, { name: r.name, subject: r.subject }]));
}

/** Whether the tenant has this template (a campaign or a sequence step names it). */
export async function templateExists(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM templates WHERE tenant_id = $1 AND id = $2', [
    tenantId,
    id,
  ]);
  return (rowCount ?? 0) > 0;
}

/** A template's Mustache parts, or null: what campaign and sequence mail render (services/worker). */
export async function templateContent(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<{ subject: string; html: string | null; text: string | null } | null> {
  const { rows } = await db.query<{ subject: string; html: string | null; text: string | null }>(
    'SELECT subject, html, text FROM templates WHERE tenant_id = $1 AND id = $2',
    [tenantId, id],
  );
  return rows[0] ?? null;
}

const templateStatements = {
  insert: insertTemplate,
  replace: replaceTemplate,
  get: getTemplate,
  list: listTemplates,
  delete: deleteTemplate,
  /** Names and subjects of known templates (the analytics' top templates). */
  names: templateNames,
};

/** The templates repository: the functions above over one pool (the api's `/templates` routes). */
export type TemplateStore = Repository<typeof templateStatements>;

export function createTemplateStore(pool: pg.Pool): TemplateStore {
  return bindPool(pool, templateStatements);
}
