import type { EmailLogEntry, EmailStatus } from '@tern/contracts';
import type pg from 'pg';

/** What every read of a tenant needs besides its data: its retention and the projection's freshness. */
export interface TenantReadContext {
  /** The tenant's override, or null (then the server default applies). */
  retentionOverride: number | null;
  /** `projection_status.last_batch_at`: the data reflects every batch committed until then. */
  asOf: Date | null;
}

/** One round trip for both, before the data query. */
export async function tenantReadContext(pool: pg.Pool, tenantId: string): Promise<TenantReadContext> {
  const { rows } = await pool.query<{ retention_days: number | null; last_batch_at: Date | null }>(
    `SELECT (SELECT retention_days FROM tenant_settings WHERE tenant_id = $1) AS retention_days,
            (SELECT last_batch_at FROM projection_status WHERE name = 'projector') AS last_batch_at`,
    [tenantId],
  );
  const row = rows[0];
  return { retentionOverride: row?.retention_days ?? null, asOf: row?.last_batch_at ?? null };
}

export async function getRetentionOverride(pool: pg.Pool, tenantId: string): Promise<number | null> {
  const { rows } = await pool.query<{ retention_days: number | null }>(
    'SELECT retention_days FROM tenant_settings WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.retention_days ?? null;
}

export async function setRetentionOverride(
  pool: pg.Pool,
  tenantId: string,
  retentionDays: number | null,
  at: Date,
): Promise<void> {
  await pool.query(
    `INSERT INTO tenant_settings (tenant_id, retention_days, updated_at) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id) DO UPDATE SET retention_days = EXCLUDED.retention_days, updated_at = EXCLUDED.updated_at`,
    [tenantId, retentionDays, at],
  );
}

type LogRow = {
  id: string;
  to_email: string | null;
  subject: string | null;
  status: EmailStatus;
  provider: string | null;
  message_id: string | null;
  created_at: Date;
  tags: unknown;
};

const toEntry = (r: LogRow): EmailLogEntry => ({
  id: r.id,
  toEmail: r.to_email ?? '',
  subject: r.subject ?? '',
  status: r.status,
  provider: r.provider,
  messageId: r.message_id,
  createdAt: r.created_at.toISOString(),
  tags: Array.isArray(r.tags) ? r.tags.filter((t): t is string => typeof t === 'string') : [],
});

/**
 * One page of a tenant's visible log entries (SPEC §7): queued (`created_at` known), not older
 * than `cutoff`, newest first with `id` in byte order (`COLLATE "C"`: the same order whatever
 * the database's collation) as tie-break. The count and the page run in parallel.
 */
export async function logsPage(
  pool: pg.Pool,
  q: { tenantId: string; cutoff: Date; page: number; limit: number; projectId?: string | null },
): Promise<{ entries: EmailLogEntry[]; total: number }> {
  // BigInt: (page − 1) · limit may pass 2^53 for absurd pages; Postgres takes it as bigint text.
  const offset = ((BigInt(q.page) - 1n) * BigInt(q.limit)).toString();
  // With a project: its own equality, so the planner uses email_logs_tenant_project_created_idx.
  const project = q.projectId ?? null;
  const filter: unknown[] = project === null ? [q.tenantId, q.cutoff] : [q.tenantId, q.cutoff, project];
  const where = `tenant_id = $1 AND created_at IS NOT NULL AND created_at >= $2${project === null ? '' : ' AND project_id = $3'}`;
  const n = filter.length;
  const [count, page] = await Promise.all([
    pool.query<{ total: string }>(`SELECT count(*) AS total FROM email_logs WHERE ${where}`, filter),
    pool.query<LogRow>(
      `SELECT id, to_email, subject, status, provider, message_id, created_at, tags
         FROM email_logs
        WHERE ${where}
        ORDER BY created_at DESC, id COLLATE "C" DESC
        LIMIT $${n + 1} OFFSET $${n + 2}::bigint`,
      [...filter, q.limit, offset],
    ),
  ]);
  return { entries: page.rows.map(toEntry), total: Number(count.rows[0]?.total ?? 0) };
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
