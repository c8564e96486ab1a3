export { type BackoffOptions, backoffMs } from './backoff.js';
export { bindPool, type Repository } from './bind-pool.js';
export { columnArrays } from './column-arrays.js';
export { onFirstUse, requireOnFirstUse } from './first-use.js';
export { type Logger, silentLogger } from './logger.js';
export { newestFirstPage, type Page, type PageWindow, type TenantTable } from './newest-first-page.js';
export { deleteTenantRow, type TenantRecords, tenantRecords } from './tenant-rows.js';
export { withTimeout } from './timeout.js';
export { type TransactionPool, withTransaction } from './transaction.js';
