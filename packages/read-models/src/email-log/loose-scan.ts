/**
 * Tenants that have rows in `table` matching `where` (on alias `x`), by a loose index scan of an
 * index led by `tenant_id` with that predicate (`(tenant_id, created_at)` of 0001 for the log
 * rows, 0090's for the content tables, the primary key of a day of the log): one index probe per
 * tenant instead of a scan of the table. A statement answering `tenant_id`.
 */
export const tenantsWith = (table: string, where: string) => `WITH RECURSIVE t(tenant_id) AS (
         SELECT min(x.tenant_id) FROM ${table} x WHERE ${where}
         UNION ALL
         SELECT (SELECT min(x.tenant_id) FROM ${table} x WHERE ${where} AND x.tenant_id > t.tenant_id)
           FROM t WHERE t.tenant_id IS NOT NULL)
       SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL`;
