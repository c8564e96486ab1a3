// The worker's tests set their state up as a tenant would, through the api (its routes and its
// test harness: fresh databases, the projector's sinks, a settable clock, credentials), and hand
// the bulk jobs' mail to the real send path.

import type { DeliveryEvent } from '@tern/contracts';
import { listUnsubscribeHeaders } from '@tern/domain';
import { project, type Stores, type TestClock, TRACKING_SECRET } from '../../api/test/support.js';
import { type BulkMail, type BulkMailer, outgoingMailer } from '../src/index.js';

export * from '../../api/test/support.js';

/**
 * The send path of the bulk jobs (campaigns, sequences) in tests: every mail handed over is kept
 * in `handed`, and its events in `appended`, folded into `stores()` through the projector's own sinks.
 * `afterEnqueue` runs after each hand-over (a test makes the worker die there by throwing).
 */
export function projectingMailer(
  stores: () => Pick<Stores, 'pool' | 'ch'>,
  afterEnqueue?: () => void,
): BulkMailer & { handed: BulkMail[]; appended: DeliveryEvent[] } {
  const handed: BulkMail[] = [];
  const appended: DeliveryEvent[] = [];
  const append = async (events: DeliveryEvent[]) => {
    appended.push(...events);
    await project(stores(), events);
  };
  return {
    handed,
    appended,
    async enqueue(tenantId, mails, at) {
      handed.push(...mails);
      await outgoingMailer(stores().pool, { append }).enqueue(tenantId, mails, at);
      afterEnqueue?.();
    },
  };
}

/** PUBLIC_URL in these tests: the base of the unsubscribe and tracking links. */
export const PUBLIC_URL = 'http://127.0.0.1:3000';

/**
 * The `List-Unsubscribe` headers the sender adds to a bulk mail as it sends it (what the mail's
 * `unsubscribe` names, for its recipient; services/sender's `build`), at these tests' PUBLIC_URL.
 */
export const unsubscribeHeadersOf = (tenantId: string, mail: BulkMail) =>
  listUnsubscribeHeaders({
    tenantId,
    email: mail.to,
    source: mail.unsubscribe,
    publicUrl: PUBLIC_URL,
    secret: TRACKING_SECRET,
  });

/** What every bulk job (campaign fan-out, sequence scheduler, automation runner) takes in these tests. */
export function bulkJobOptions(
  stores: Pick<Stores, 'pool'>,
  mailer: BulkMailer,
  clock: Pick<TestClock, 'now'>,
) {
  return {
    pool: stores.pool,
    mailer,
    now: clock.now,
  };
}

/**
 * A test file's `afterAll`: its bulk jobs stopped first, then the api and the stores closed, in
 * the order given; one still unset (its `beforeAll` failed before it) is passed over.
 */
export async function closeAll(
  ...parts: ({ stop(): Promise<void> } | { close(): PromiseLike<unknown> } | undefined)[]
): Promise<void> {
  for (const part of parts) {
    if (part === undefined) continue;
    await ('stop' in part ? part.stop() : part.close());
  }
}
