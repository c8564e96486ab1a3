export { type ClaimDueSpec, claimDue, claimDueSql } from './claim-due.js';
export { type LeaseClaimSpec, leaseClaim, leaseClaimSql } from './lease-claim.js';
export {
  createLeasedJob,
  type LeasedJob,
  type LeasedJobContext,
  type LeasedJobOptions,
} from './leased-job.js';
export { createPoller, type Poller, type PollerOptions } from './poller.js';
