import { type PageQuery, pageWindow, type Suppression, type SuppressionSource } from '@tern/contracts';
import type { Page } from '@tern/kernel';
import type pg from 'pg';
import { normaliseAddress } from './checks.js';

/**
 * The suppression list's routes (SPEC §13; `createSuppressionStore` of the api binds them): the
 * entries added and removed by hand, the list and one entry. The projection adds the automatic
 * ones in its own transaction (`model.ts`); an unsubscribe adds its entry with its contact
 * (`insertSuppressionSql`).
 */

type Row = { email: string; reason: string | null; source: SuppressionSource; created_at: Date };

const toSuppression = (r: Row): Suppression => ({
  email: r.email,
  reason: r.reason,
  source: r.source,
  createdAt: r.created_at.toISOString(),
});

/**
 * `INSERT INTO suppressions … SELECT … [WHERE where] ON CONFLICT (tenant_id, email) DO NOTHING`:
 * one entry, unless the address is listed already (whatever its reason). Every value is an SQL
 * expression of the caller's statement (a placeholder or a literal), `email` in its stored,
 * lowercased form. packages/bulk's unsubscribe embeds it, so the contact's change and the entry are
 * one statement.
 */
export function insertSuppressionSql(
  row: { tenantId: string; email: string; reason: string; source: string; createdAt: string },
  where?: string,
): string {
  const filter = where === undefined ? '' : ` WHERE ${where}`;
  return `INSERT INTO suppressions (tenant_id, email, reason, source, created_at)
   SELECT ${row.tenantId}, ${row.email}, ${row.reason}, ${row.source}, ${row.createdAt}${filter}
   ON CONFLICT (tenant_id, email) DO NOTHING`;
}

/**
 * Adds the address unless it is there already. `created: false` → the existing entry, unchanged
 * (its reason and source stay).
 */
export async function addSuppression(
  pool: pg.Pool,
  tenantId: string,
  input: { email: string; reason: string | null; source: SuppressionSource },
  at: Date,
): Promise<{ created: boolean; suppression: Suppression }> {
  const email = normaliseAddress(input.email);
  const inserted = await pool.query<Row>(
    `INSERT INTO suppressions (tenant_id, email, reason, source, created_at) VALUES ($1, lower($2), $3, $4, $5)
     ON CONFLICT (tenant_id, email) DO NOTHING
     RETURNING email, reason, source, created_at`,
    [tenantId, email, input.reason, input.source, at],
  );
  if (inserted.rows[0]) return { created: true, suppression: toSuppression(inserted.rows[0]) };
  const existing = await getSuppression(pool, tenantId, email);
  // Deleted between the two statements: add it again.
  if (existing === null) return addSuppression(pool, tenantId, input, at);
  return { created: false, suppression: existing };
}

export async function getSuppression(
  pool: pg.Pool,
  tenantId: string,
  email: string,
): Promise<Suppression | null> {
  const { rows } = await pool.query<Row>(
    'SELECT email, reason, source, created_at FROM suppressions WHERE tenant_id = $1 AND email = lower($2)',
    [tenantId, normaliseAddress(email)],
  );
  return rows[0] ? toSuppression(rows[0]) : null;
}

/** One page, newest first (`created_at DESC, email DESC`), and the tenant's total. */
export async function listSuppressions(
  pool: pg.Pool,
  tenantId: string,
  page: PageQuery,
): Promise<Page<Suppression>> {
  const { limit, offset } = pageWindow(page);
  const [count, list] = await Promise.all([
    pool.query<{ total: string }>('SELECT count(*) AS total FROM suppressions WHERE tenant_id = $1', [
      tenantId,
    ]),
    pool.query<Row>(
      `SELECT email, reason, source, created_at FROM suppressions
        WHERE tenant_id = $1
        ORDER BY created_at DESC, email COLLATE "C" DESC
        LIMIT $2 OFFSET $3::bigint`,
      [tenantId, limit, offset],
    ),
  ]);
  return { items: list.rows.map(toSuppression), total: Number(count.rows[0]?.total ?? 0) };
}

/** False when the address was not on the tenant's list. */
export async function removeSuppression(pool: pg.Pool, tenantId: string, email: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    'DELETE FROM suppressions WHERE tenant_id = $1 AND email = lower($2)',
    [tenantId, normaliseAddress(email)],
  );
  return (rowCount ?? 0) > 0;
}
