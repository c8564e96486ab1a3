// The worker's tests set their state up as a tenant would, through the api (its routes and its
// test harness: fresh databases, the projector's sinks, a settable clock, credentials), and hand
// the bulk jobs' mail to the real send path.

import { project, type Stores } from '../../api/test/support.js';
import { type BulkMail, type BulkMailer, outgoingMailer } from '../src/index.js';

export {
  bearer,
  buildApp,
  createClock,
  createKey,
  DEFAULT_RETENTION_DAYS,
  dayStart,
  ENCRYPTION_KEY,
  eventsOf,
  isoDay,
  jwtFor,
  NOW,
  openStores,
  project,
  type Stores,
  suffix,
  TRACKING_SECRET,
  testTenants,
} from '../../api/test/support.js';

/**
 * The send path of the bulk jobs (campaigns, sequences) in tests: every mail handed over is kept
 * in `handed`, and its events are folded into `stores()` through the projector's own sinks.
 * `afterEnqueue` runs after each hand-over (a test makes the worker die there by throwing).
 */
export function projectingMailer(
  stores: () => Pick<Stores, 'pool' | 'ch'>,
  afterEnqueue?: () => void,
): BulkMailer & { handed: BulkMail[] } {
  const handed: BulkMail[] = [];
  return {
    handed,
    async enqueue(tenantId, mails, at) {
      handed.push(...mails);
      await outgoingMailer(stores().pool, { append: (events) => project(stores(), events) }).enqueue(
        tenantId,
        mails,
        at,
      );
      afterEnqueue?.();
    },
  };
}
