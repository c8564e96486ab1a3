import type { DeliveryEvent, TrackingSettings } from '@tern/contracts';
import { cancelledEvent } from '@tern/domain';
import { backoffMs, createPoller, type Poller } from '@tern/jobs';
import type { createAttempt } from './attempt.js';
import type { SenderContext } from './options.js';
import type { ClaimedRow, Outcome, OutgoingStore } from './outgoing.js';
import type { ProviderWatch } from './provider-health.js';

export interface DueListJob {
  poller: Poller;
  /** One pass over the due-list (claims and sends what is due); returns the emails handled. */
  runOnce(): Promise<number>;
}

/**
 * The due-list worker of the sender: claims due rows (with a lease), lets the tenants' send rates
 * thin them, attempts each, and appends the round's outcomes before marking the rows; every so
 * many passes it also finishes stuck cancellations and prunes the rate counters and idempotency keys.
 */
export function createDueListJob(
  ctx: SenderContext,
  store: OutgoingStore,
  attempt: ReturnType<typeof createAttempt>,
  watch: ProviderWatch,
): DueListJob {
  const { opts, logger, now } = ctx;
  const pollIntervalMs = opts.pollIntervalMs ?? 500;
  const concurrency = opts.concurrency ?? 32;
  let sweeps = 0;

  /** Appends with a few quick retries: the provider already answered, the outcome must reach the log. */
  async function append(events: DeliveryEvent[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await opts.log.append(events);
        return;
      } catch (error) {
        if (attempt >= 5) throw error;
        logger.warn({ err: error, attempt }, 'sender: append failed; retrying');
        await new Promise((r) => setTimeout(r, backoffMs(attempt)));
      }
    }
  }

  /**
   * One claim round: every attempt, then their outcomes in one append and the rows in one update.
   * A crash before the append repeats the round's provider transactions (the same Message-IDs), as
   * a crash mid-send always could; after it, the consumer's duplicates change nothing.
   */
  async function round(rows: readonly ClaimedRow[]): Promise<void> {
    const tracking = new Map<string, Promise<TrackingSettings>>();
    const trackingOf = (tenantId: string) => {
      let t = tracking.get(tenantId);
      if (t === undefined) {
        t = store.tenantTracking(tenantId);
        tracking.set(tenantId, t);
      }
      return t;
    };
    const settled = await Promise.allSettled(rows.map((row) => attempt(row, trackingOf)));
    const outcomes: Outcome[] = [];
    for (const r of settled) {
      if (r.status === 'fulfilled') outcomes.push(r.value);
      else
        logger.error(
          { err: r.reason },
          'sender: email not finished; its lease will expire and it is retried',
        );
    }
    const handed = outcomes.filter((o) => o.handed);
    const mine = await store.stillMine(handed.map((o) => o.row));
    const kept = outcomes.filter((o) => {
      if (!o.handed || mine.has(`${o.row.tenant_id}\u0000${o.row.id}`)) return true;
      // The provider took longer than the lease: another instance claimed the email again and
      // owns its outcome. Appending ours too would put two answers on one timeline.
      logger.warn(
        { emailId: o.row.id, attempt: o.row.attempts },
        'sender: lease lost while sending; outcome dropped',
      );
      return false;
    });
    const events = kept.flatMap((o) => o.events);
    if (events.length > 0) await append(events);
    await store.finish(kept);
  }

  /** Cancelled rows whose email.cancelled did not reach the log (the API answered, then crashed or the log failed). */
  async function sweepCancelling(): Promise<void> {
    const rows = await store.stuckCancelling();
    if (rows.length === 0) return;
    await append(rows.map((r) => cancelledEvent(r.tenant_id, r.id, now())));
    await store.markCancelled(rows);
  }

  async function runOnce(): Promise<number> {
    await watch.check();
    if (sweeps % 20 === 0) await sweepCancelling();
    if (sweeps % 120 === 0) await store.pruneRateCounters();
    if (sweeps % 1200 === 0) await store.pruneIdempotencyKeys();
    sweeps++;
    let handled = 0;
    const exhausted = new Set<string>();
    for (;;) {
      const claimed = await store.claim(concurrency, exhausted);
      if (claimed.length === 0) return handled;
      const rows = await store.withinRate(claimed, exhausted);
      await round(rows);
      handled += rows.length;
    }
  }

  const poller = createPoller({
    name: 'sender',
    intervalMs: pollIntervalMs,
    run: runOnce,
    onError: (error) => logger.warn({ err: error }, 'sender: due-list pass failed; trying again'),
  });

  return { poller, runOnce };
}
