export { type BackoffOptions, backoffMs } from './backoff.js';
export { bindPool, type Repository } from './bind-pool.js';
export { type ClaimDueSpec, claimDue, claimDueSql } from './claim-due.js';
export {
  createLeasedJob,
  type LeasedJob,
  type LeasedJobContext,
  type LeasedJobOptions,
} from './leased-job.js';
export { type Logger, silentLogger } from './logger.js';
export { createPoller, type Poller, type PollerOptions } from './poller.js';
export { withTimeout } from './timeout.js';
export { type TransactionPool, withTransaction } from './transaction.js';
