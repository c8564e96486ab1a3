import type pg from 'pg';
import { newestFirstPage, type Page, type PageWindow, type TenantTable } from './newest-first-page.js';

type Queryable = Pick<pg.Pool, 'query'>;

/**
 * The reads of a tenant table as records: the same for every such table (templates, topics,
 * segments, contacts, webhook endpoints, sending domains, …). The owner of the table names it and
 * its columns; its SQL stays the owner's.
 */
export interface TenantRecords<T> {
  /** The tenant's row `id` as a record; null when the tenant has no such row. */
  get(db: Queryable, tenantId: string, id: string): Promise<T | null>;
  /** `newestFirstPage` as records: one page of the tenant's rows, newest first, and its total. */
  newestFirst(db: Queryable, tenantId: string, window: PageWindow): Promise<Page<T>>;
}

/** The reads of `t.table`, each row (`R`, the `columns`) mapped by `map`. */
export function tenantRecords<R extends pg.QueryResultRow, T>(
  t: TenantTable & { map: (row: R) => T },
): TenantRecords<T> {
  return {
    async get(db, tenantId, id) {
      const { rows } = await db.query<R>(
        `SELECT ${t.columns} FROM ${t.table} WHERE tenant_id = $1 AND id = $2`,
        [tenantId, id],
      );
      return rows[0] ? t.map(rows[0]) : null;
    },
    async newestFirst(db, tenantId, window) {
      const { rows, total } = await newestFirstPage<R>(db, t, tenantId, window);
      return { items: rows.map((r) => t.map(r)), total };
    },
  };
}

/** Deletes the tenant's row `id` of `table`; false when there was none. */
export async function deleteTenantRow(
  db: Queryable,
  table: string,
  tenantId: string,
  id: string,
): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    id,
  ]);
  return (rowCount ?? 0) > 0;
}
