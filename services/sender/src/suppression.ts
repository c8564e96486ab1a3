import type { IsSuppressed } from './ports.js';

/**
 * The minimal suppression check the sender uses until the suppressions work provides its
 * `isSuppressed` (services/api/src/suppressions/store.ts): addresses are kept lowercased (SPEC §13).
 */
export const defaultIsSuppressed: IsSuppressed = async (pool, tenantId, email) => {
  const { rowCount } = await pool.query('SELECT 1 FROM suppressions WHERE tenant_id = $1 AND email = $2', [
    tenantId,
    email.toLowerCase(),
  ]);
  return (rowCount ?? 0) > 0;
};
