import type { DeliveryEvent } from '@tern/contracts';
import { withTransaction } from '@tern/kernel';
import {
  type ClaimedRow,
  claimDueSends,
  clearOutcomes,
  finishSends,
  markSendsCancelled,
  markSendsQueued,
  type PendingOutcome,
  pendingOutcomes,
  pruneIdempotencyKeys as pruneKeys,
  stuckCancellingSends,
  sweepUnqueuedSends,
  unclaimSends,
} from '@tern/sending';
import { createTenantSettingsCache, type SenderTenantSettings } from '@tern/tenant-settings';
import type { SenderContext } from './options.js';

export { type ClaimedRow, keyOf, type PendingOutcome } from '@tern/sending';

/** What one attempt ends with: its events and the row's next state. */
export interface Outcome {
  row: ClaimedRow;
  events: DeliveryEvent[];
  state: 'done' | 'pending';
  dueAt: Date | null;
  error: string | null;
  /** The message went to the provider: its outcome counts only while the claim is still ours. */
  handed: boolean;
}

export type OutgoingStore = ReturnType<typeof createOutgoingStore>;

/**
 * The sender's store: its due-list (`outgoing_emails`) and the prune of old idempotency keys
 * through their owner `@tern/sending` (`due-list-store.ts`, `idempotency-keys.ts`), the send-rate
 * counters (`send_rate_counters`, owned here; the allowance is one transaction) and the tenants'
 * settings (read at most once a second, `@tern/tenant-settings`).
 */
export function createOutgoingStore(ctx: SenderContext) {
  const { opts, now } = ctx;
  const leaseMs = opts.leaseMs ?? 120_000;
  const tenantSettings = createTenantSettingsCache({
    pool: opts.pool,
    defaultRate: opts.defaultSendRatePerSecond ?? 0,
    maxRate: opts.maxSendRatePerSecond ?? 0,
  });

  const markQueued = (events: readonly { tenantId: string; emailId: string }[]) =>
    markSendsQueued(opts.pool, events, now());

  /**
   * Claims due rows (SPEC §23): transactional mail of every tenant ahead of campaign and sequence
   * mail, then by due time; tenants whose send rate is used up for this second are left out.
   */
  const claim = (limit: number, exhausted: ReadonlySet<string>): Promise<ClaimedRow[]> =>
    claimDueSends(opts.pool, { at: now(), leaseMs, limit, exhausted });

  /**
   * The claimed rows the tenants' send rates allow this second (SPEC §23). The allowance is a
   * counter per tenant and second shared by every sender instance; rows past it go back to the
   * due-list (unclaimed, due at the next second) and their tenants join `exhausted`.
   */
  async function withinRate(
    rows: ClaimedRow[],
    exhausted: Set<string>,
    settings: ReadonlyMap<string, SenderTenantSettings>,
  ): Promise<ClaimedRow[]> {
    const limited = new Map<string, number>();
    for (const [tenant, s] of settings) if (s.rate > 0) limited.set(tenant, s.rate);
    if (limited.size === 0) return rows;
    const at = now();
    const second = new Date(Math.floor(at.getTime() / 1000) * 1000);
    const wanted = new Map<string, number>();
    for (const r of rows)
      if (limited.has(r.tenant_id)) wanted.set(r.tenant_id, (wanted.get(r.tenant_id) ?? 0) + 1);
    if (wanted.size === 0) return rows;
    const ids = [...wanted.keys()];
    const granted = new Map<string, number>();
    await withTransaction(opts.pool, async (client) => {
      await client.query(
        `INSERT INTO send_rate_counters (tenant_id, second, sent)
         SELECT t, $2, 0 FROM unnest($1::text[]) AS t ON CONFLICT DO NOTHING`,
        [ids, second],
      );
      const { rows: used } = await client.query<{ tenant_id: string; sent: number }>(
        `SELECT tenant_id, sent FROM send_rate_counters WHERE second = $2 AND tenant_id = ANY($1::text[])
          ORDER BY tenant_id FOR UPDATE`,
        [ids, second],
      );
      for (const u of used) {
        const want = wanted.get(u.tenant_id) ?? 0;
        granted.set(u.tenant_id, Math.max(0, Math.min(want, (limited.get(u.tenant_id) ?? 0) - u.sent)));
      }
      await client.query(
        `UPDATE send_rate_counters c SET sent = c.sent + g.n
           FROM unnest($1::text[], $3::int[]) AS g(t, n) WHERE c.tenant_id = g.t AND c.second = $2`,
        [ids, second, ids.map((t) => granted.get(t) ?? 0)],
      );
    });
    const keep: ClaimedRow[] = [];
    const back: ClaimedRow[] = [];
    // Transactional rows first within a tenant (the claim returns them in no particular order).
    const ordered = [...rows].sort((a, b) => Number(a.bulk) - Number(b.bulk));
    for (const r of ordered) {
      if (!limited.has(r.tenant_id)) keep.push(r);
      else {
        const left = granted.get(r.tenant_id) ?? 0;
        if (left > 0) {
          granted.set(r.tenant_id, left - 1);
          keep.push(r);
        } else {
          back.push(r);
          exhausted.add(r.tenant_id);
        }
      }
    }
    await unclaimSends(opts.pool, back, { dueAt: new Date(second.getTime() + 1000), at });
    return keep;
  }

  /**
   * Rows left `awaiting_log` for over 30 s: their request died before its email.queued reached the
   * log (the caller checked that the consumer has read the whole log). Deleted, 500 at a time.
   */
  const sweepUnqueued = () => sweepUnqueuedSends(opts.pool, new Date(now().getTime() - 30_000), 500);

  /** Counters of seconds long past. */
  async function pruneRateCounters(): Promise<void> {
    await opts.pool.query('DELETE FROM send_rate_counters WHERE second < $1', [
      new Date(now().getTime() - 60_000),
    ]);
  }

  /**
   * Marks the rows of a round done or due again and records their outcome events, in one
   * statement; returns the outcomes recorded (the rows this attempt still held).
   */
  const finish = (outcomes: readonly Outcome[]) => finishSends(opts.pool, outcomes, now());

  /** Outcomes recorded over `ageMs` ago whose events are not in the log yet (its append failed). */
  const unreported = (ageMs: number, limit: number) =>
    pendingOutcomes(opts.pool, new Date(now().getTime() - ageMs), limit);

  /** These outcomes' events are in the log now. */
  const reported = (outcomes: readonly PendingOutcome[]) => clearOutcomes(opts.pool, outcomes);

  /** Idempotency keys live 24 h (SPEC §11); older ones are dropped in small batches. */
  const pruneIdempotencyKeys = () => pruneKeys(opts.pool, new Date(now().getTime() - 25 * 3600_000));

  /** Cancelled rows whose email.cancelled has not reached the log after 5 s. */
  const stuckCancelling = () => stuckCancellingSends(opts.pool, new Date(now().getTime() - 5_000));

  /** Their email.cancelled is in the log now. */
  const markCancelled = (rows: readonly { tenant_id: string; id: string }[]) =>
    markSendsCancelled(opts.pool, rows);

  return {
    markQueued,
    stuckCancelling,
    markCancelled,
    sweepUnqueued,
    claim,
    withinRate,
    pruneRateCounters,
    finish,
    unreported,
    reported,
    tenantSettings: tenantSettings.of,
    pruneIdempotencyKeys,
  };
}
