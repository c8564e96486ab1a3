import type pg from 'pg';

/** Where `newestFirstPage` reads: a table of tenant rows (`tenant_id`, `id`, `created_at`), the columns of `R`. */
export interface TenantTable {
  table: string;
  columns: string;
}

/** A page's rows: `limit` rows from `offset` (bigint text, bound as `$n::bigint`). */
export interface PageWindow {
  limit: number;
  offset: string;
}

/** One page of a tenant's records and how many it has in all. */
export interface Page<T> {
  items: T[];
  total: number;
}

/**
 * One page of a tenant's rows of `t.table`, newest first (`created_at DESC`, then `id` in byte
 * order), `limit` rows from `offset`; and how many rows the tenant has in all.
 */
export async function newestFirstPage<R extends pg.QueryResultRow>(
  db: Pick<pg.Pool, 'query'>,
  t: TenantTable,
  tenantId: string,
  window: PageWindow,
): Promise<{ rows: R[]; total: number }> {
  const [page, count] = await Promise.all([
    db.query<R>(
      `SELECT ${t.columns} FROM ${t.table} WHERE tenant_id = $1
        ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2 OFFSET $3::bigint`,
      [tenantId, window.limit, window.offset],
    ),
    db.query<{ total: string }>(`SELECT count(*) AS total FROM ${t.table} WHERE tenant_id = $1`, [tenantId]),
  ]);
  return { rows: page.rows, total: Number(count.rows[0]?.total ?? 0) };
}
