export { type ClaimDueSpec, claimDue, claimDueSql } from './claim-due.js';
export { createPoller, type Poller, type PollerLogger, type PollerOptions } from './poller.js';
