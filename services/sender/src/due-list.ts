import type { DeliveryEvent } from '@tern/contracts';
import { cancelledEvent } from '@tern/domain';
import { createPoller, type Poller } from '@tern/jobs';
import { backoffMs } from '@tern/kernel';
import type { SenderTenantSettings } from '@tern/tenant-settings';
import { type createAttempt, type RoundContext, suppressionKey } from './attempt.js';
import { SENDER_GROUP, type SenderContext } from './options.js';
import {
  type ClaimedRow,
  keyOf,
  type Outcome,
  type OutgoingStore,
  type PendingOutcome,
} from './outgoing-store.js';
import type { GetTemplate } from './ports.js';
import type { ProviderWatch } from './provider-health.js';
import { type Envelope, envelopeOfMessage } from './recipients.js';
import { DEFAULT_LANES, nextRoundSize, relayLimits } from './round-size.js';

/** Outcomes left in `send_outcomes` this long are the relay's (a round's own append is done by then). */
const RELAY_AGE_MS = 3_000;

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
  const lanes = Math.max(1, opts.lanes ?? DEFAULT_LANES);
  const limits = {
    min: concurrency,
    max: Math.max(concurrency, opts.maxRoundSize ?? 512),
    targetMs: opts.roundTargetMs ?? 500,
  };
  const bulkLimits = { ...limits, max: Math.max(concurrency, opts.maxBulkRoundSize ?? concurrency * 4) };
  /** The next claim round's size (`nextRoundSize`), shared by the lanes. */
  let roundSize = concurrency;
  let sweeps = 0;

  /** Appends with a quick retry (a blip); a longer outage is the relay's (`relayOutcomes`). */
  async function append(events: DeliveryEvent[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await opts.log.append(events);
        return;
      } catch (error) {
        if (attempt >= 2) throw error;
        logger.warn({ err: error, attempt }, 'sender: append failed; retrying');
        await new Promise((r) => setTimeout(r, backoffMs(attempt)));
      }
    }
  }

  /**
   * The round's suppressed addresses (SPEC §13, §22: every address of every envelope), as
   * `suppressionKey`: one query for the round when the suppression list answers in batches, else
   * one per address, side by side.
   */
  async function suppressedOf(
    rows: readonly ClaimedRow[],
    envelope: (row: ClaimedRow) => Envelope,
  ): Promise<Set<string>> {
    const asked = rows
      .filter((r) => r.message.erased !== true)
      .flatMap((r) => envelope(r).map((a) => ({ tenantId: r.tenant_id, email: a.address })));
    if (asked.length === 0) return new Set();
    const answers = opts.suppressedAmong
      ? await opts.suppressedAmong(opts.pool, asked)
      : await Promise.all(asked.map((a) => opts.isSuppressed(opts.pool, a.tenantId, a.email)));
    return new Set(
      asked.filter((_, i) => answers[i] === true).map((a) => suppressionKey(a.tenantId, a.email)),
    );
  }

  /**
   * One claim round: every attempt, then the rows and their outcome events in one statement
   * (`send_outcomes`), then the events in one append. A crash before that statement repeats the
   * round's provider transactions (the same Message-IDs), as a crash mid-send always could; after
   * it, nothing is sent again: the outcomes reach the log from `send_outcomes` (the consumers drop
   * the duplicates of an append repeated after a crash).
   */
  async function round(
    rows: readonly ClaimedRow[],
    settings: ReadonlyMap<string, SenderTenantSettings>,
  ): Promise<void> {
    const templates = new Map<string, ReturnType<GetTemplate>>();
    const envelopes = new Map<ClaimedRow, Envelope>();
    const envelope = (row: ClaimedRow): Envelope => {
      let e = envelopes.get(row);
      if (e === undefined) {
        e = envelopeOfMessage(row.message);
        envelopes.set(row, e);
      }
      return e;
    };
    const shared: RoundContext = {
      settings,
      suppressed: await suppressedOf(rows, envelope),
      envelope,
      // A template named by several emails of the round is read once.
      template(tenantId, id) {
        const key = `${tenantId}\u0000${id}`;
        let t = templates.get(key);
        if (t === undefined) {
          t = opts.getTemplate(opts.pool, tenantId, id);
          templates.set(key, t);
        }
        return t;
      },
    };
    const settled = await Promise.allSettled(rows.map((row) => attempt(row, shared)));
    const outcomes: Outcome[] = [];
    for (const r of settled) {
      if (r.status === 'fulfilled') outcomes.push(r.value);
      else
        logger.error(
          { err: r.reason },
          'sender: email not finished; its lease will expire and it is retried',
        );
    }
    // The rows and their outcome events in one statement (issue 49, item 1): from here on a
    // failed append delays the outcome and repeats nothing, as no lease of these rows lapses.
    const recorded = await store.finish(outcomes);
    if (recorded.length < outcomes.length) {
      const kept = new Set(recorded.map((o) => `${o.tenant_id}\u0000${o.email_id}`));
      for (const o of outcomes)
        if (!kept.has(keyOf(o.row)))
          // The provider took longer than the lease: another instance claimed the email again and
          // owns its outcome. Appending ours too would put two answers on one timeline.
          logger.warn(
            { emailId: o.row.id, attempt: o.row.attempts },
            'sender: lease lost while sending; outcome dropped',
          );
    }
    await report(recorded);
  }

  /**
   * Appends recorded outcomes and clears them. A failure leaves them in `send_outcomes` for
   * `relayOutcomes` (a log outage delays outcomes; the sends are already final).
   */
  async function report(recorded: readonly PendingOutcome[]): Promise<boolean> {
    if (recorded.length === 0) return true;
    try {
      await append(recorded.flatMap((o) => o.events as DeliveryEvent[]));
    } catch (error) {
      logger.warn(
        { err: error, outcomes: recorded.length },
        'sender: outcomes not appended; kept in send_outcomes until the log is back',
      );
      return false;
    }
    await store.reported(recorded);
    return true;
  }

  /** When the relay may try the log again after a failed append (backs off while the log is down). */
  let relayAfter = 0;
  let relayFailures = 0;

  /** Outcomes whose append failed (a log outage, a crash after the send): appended now, oldest first. */
  async function relayOutcomes(): Promise<void> {
    if (Date.now() < relayAfter) return;
    for (let batch = 0; batch < 20; batch++) {
      const pending = await store.unreported(RELAY_AGE_MS, 500);
      if (pending.length === 0) break;
      if (!(await report(pending))) {
        relayFailures++;
        relayAfter = Date.now() + backoffMs(relayFailures);
        return;
      }
      if (pending.length < 500) break;
    }
    relayFailures = 0;
  }

  /** Cancelled rows whose email.cancelled did not reach the log (the API answered, then crashed or the log failed). */
  async function sweepCancelling(): Promise<void> {
    const rows = await store.stuckCancelling();
    if (rows.length === 0) return;
    await append(rows.map((r) => cancelledEvent(r.tenant_id, r.id, now())));
    await store.markCancelled(rows);
  }

  /**
   * Sends whose request died between writing the row and appending its email.queued (issue 49,
   * item 2: a kill -9 of the api mid-batch). Only once this sender's consumer has read the whole
   * log: every row whose email.queued is in it has then left `awaiting_log`.
   */
  async function sweepUnqueued(): Promise<void> {
    const lag = await opts.log.lag(opts.group ?? SENDER_GROUP).catch(() => -1);
    if (lag !== 0) return;
    const swept = await store.sweepUnqueued();
    if (swept.length > 0)
      logger.warn(
        { count: swept.length },
        'sender: deleted sends whose request died before their email.queued reached the log',
      );
  }

  async function runOnce(): Promise<number> {
    await watch.check();
    await relayOutcomes();
    if (sweeps % 20 === 0) await sweepCancelling();
    if (sweeps % 20 === 10) await sweepUnqueued();
    if (sweeps % 120 === 0) await store.pruneRateCounters();
    if (sweeps % 1200 === 0) await store.pruneIdempotencyKeys();
    sweeps++;
    const exhausted = new Set<string>();
    // Lanes follow the backlog (issue 45 item 1): a lane whose claim came back full of
    // transactional mail starts another (up to `lanes`), so one round's statements and its slowest
    // transactions overlap the next rounds' provider transactions. The lanes share one budget of
    // claimed, unfinished emails (`limits.max`): a crash repeats at most that many transactions,
    // as one round of `maxRoundSize` always could. A single due email (a retry) never starts one.
    let unfinished = 0;
    let running = 0;
    const lanesDone: Promise<number>[] = [];
    const startLane = () => {
      running++;
      lanesDone.push(
        lane().finally(() => {
          running--;
        }),
      );
    };
    const lane = async (): Promise<number> => {
      let handled = 0;
      for (;;) {
        const started = performance.now();
        const size = Math.min(roundSize, limits.max - unfinished);
        if (size <= 0) return handled;
        unfinished += size;
        let claimed: ClaimedRow[] = [];
        try {
          claimed = await store.claim(size, exhausted);
        } finally {
          unfinished -= size - claimed.length;
        }
        if (claimed.length === 0) {
          roundSize = limits.min;
          return handled;
        }
        try {
          const settings = await store.tenantSettings(claimed.map((r) => r.tenant_id));
          const rows = await store.withinRate(claimed, exhausted, settings);
          // Transactional mail claimed with campaign mail goes first, in a round of its own (SPEC
          // §23): its outcomes reach the log (and the projector) ahead of the campaign's.
          const urgent = rows.filter((r) => !r.bulk);
          const bulk = rows.length - urgent.length;
          if (bulk === 0 && claimed.length === size && running < lanes && unfinished < limits.max)
            startLane();
          if (urgent.length > 0 && bulk > 0) {
            await round(urgent, settings);
            await round(
              rows.filter((r) => r.bulk),
              settings,
            );
          } else await round(rows, settings);
          handled += rows.length;
          const took = performance.now() - started;
          roundSize = nextRoundSize(
            size,
            claimed.length,
            took,
            relayLimits(bulk > 0 ? bulkLimits : limits, opts.provider.capacity?.(), bulk > 0 ? 1 : lanes),
          );
        } finally {
          unfinished -= claimed.length;
        }
      }
    };
    startLane();
    // Every lane, those started while others ran included, is over before the pass ends; the
    // first failure is the pass's.
    let handled = 0;
    let failed: { error: unknown } | undefined;
    for (let i = 0; i < lanesDone.length; i++) {
      try {
        handled += await lanesDone[i]!;
      } catch (error) {
        failed ??= { error };
      }
    }
    if (failed) throw failed.error;
    return handled;
  }

  const poller = createPoller({
    name: 'sender',
    intervalMs: pollIntervalMs,
    run: runOnce,
    onError: (error) => logger.warn({ err: error }, 'sender: due-list pass failed; trying again'),
  });

  return { poller, runOnce };
}
