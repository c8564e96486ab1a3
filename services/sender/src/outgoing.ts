import type { DeliveryEvent } from '@tern/contracts';
import { claimDue, withTransaction } from '@tern/jobs';
import type { StoredMessage } from '@tern/sending';
import { createTenantSettingsCache, type SenderTenantSettings } from '@tern/tenant-settings';
import type { SenderContext } from './options.js';

/** A due row of `outgoing_emails` this instance claimed (with a lease) for one attempt. */
export type ClaimedRow = {
  tenant_id: string;
  id: string;
  attempts: number;
  message: StoredMessage;
  bulk: boolean;
};

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

/** A row's key in a round's sets: `tenant\u0000id`. */
export const keyOf = (r: { tenant_id: string; id: string }) => `${r.tenant_id}\u0000${r.id}`;

export type OutgoingStore = ReturnType<typeof createOutgoingStore>;

/**
 * The sender's statements on its due-list (`outgoing_emails`), the send-rate counters and the
 * tenants' settings (read at most once a second, `tenant-settings.ts`); each is one statement (the rate allowance one transaction).
 */
export function createOutgoingStore(ctx: SenderContext) {
  const { opts, now } = ctx;
  const leaseMs = opts.leaseMs ?? 120_000;
  const tenantSettings = createTenantSettingsCache({
    pool: opts.pool,
    defaultRate: opts.defaultSendRatePerSecond ?? 0,
  });

  async function markQueued(events: readonly { tenantId: string; emailId: string }[]): Promise<number> {
    if (events.length === 0) return 0;
    const { rowCount } = await opts.pool.query(
      `UPDATE outgoing_emails o SET state = 'pending', updated_at = $3
         FROM unnest($1::text[], $2::text[]) AS q(t, i)
        WHERE o.tenant_id = q.t AND o.id = q.i AND o.state = 'awaiting_log'`,
      [events.map((e) => e.tenantId), events.map((e) => e.emailId), now()],
    );
    return rowCount ?? 0;
  }

  /**
   * Claims due rows (SPEC §23): transactional mail of every tenant ahead of campaign and sequence
   * mail, then by due time; tenants whose send rate is used up for this second are left out.
   */
  async function claim(limit: number, exhausted: ReadonlySet<string>): Promise<ClaimedRow[]> {
    const at = now();
    return claimDue<ClaimedRow>(
      opts.pool,
      {
        table: 'outgoing_emails',
        alias: 'o',
        keys: ['tenant_id', 'id'],
        due: `((state = 'pending' AND due_at <= $1) OR (state = 'sending' AND lease_until < $1))
              AND NOT (tenant_id = ANY($4::text[]))`,
        orderBy: 'bulk, due_at',
        limit: '$3',
        set: `state = 'sending', attempts = o.attempts + 1, lease_until = $2, updated_at = $1`,
        returning: 'o.tenant_id, o.id, o.attempts, o.message, o.bulk',
      },
      [at, new Date(at.getTime() + leaseMs), limit, [...exhausted]],
    );
  }

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
    if (back.length > 0) {
      await opts.pool.query(
        `UPDATE outgoing_emails o
            SET state = 'pending', attempts = o.attempts - 1, lease_until = NULL, due_at = $3, updated_at = $4
           FROM unnest($1::text[], $2::text[]) AS r(t, i)
          WHERE o.tenant_id = r.t AND o.id = r.i AND o.state = 'sending'`,
        [back.map((r) => r.tenant_id), back.map((r) => r.id), new Date(second.getTime() + 1000), at],
      );
    }
    return keep;
  }

  /** Counters of seconds long past. */
  async function pruneRateCounters(): Promise<void> {
    await opts.pool.query('DELETE FROM send_rate_counters WHERE second < $1', [
      new Date(now().getTime() - 60_000),
    ]);
  }

  /** The rows still claimed by this attempt (same `attempts`, still `sending`), as `tenant\u0000id`. */
  async function stillMine(rows: readonly ClaimedRow[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const { rows: mine } = await opts.pool.query<{ tenant_id: string; id: string }>(
      `SELECT o.tenant_id, o.id FROM outgoing_emails o
         JOIN unnest($1::text[], $2::text[], $3::int[]) AS q(t, i, a)
           ON o.tenant_id = q.t AND o.id = q.i AND o.attempts = q.a
        WHERE o.state = 'sending'`,
      [rows.map((r) => r.tenant_id), rows.map((r) => r.id), rows.map((r) => r.attempts)],
    );
    return new Set(mine.map(keyOf));
  }

  /** Marks the rows of a round done or due again, in one statement. */
  async function finish(outcomes: readonly Outcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    await opts.pool.query(
      `UPDATE outgoing_emails o
          SET state = f.state, due_at = COALESCE(f.due, o.due_at), lease_until = NULL, last_error = f.err,
              updated_at = $6
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[]) AS f(t, i, state, due, err)
        WHERE o.tenant_id = f.t AND o.id = f.i AND o.state = 'sending'`,
      [
        outcomes.map((o) => o.row.tenant_id),
        outcomes.map((o) => o.row.id),
        outcomes.map((o) => o.state),
        outcomes.map((o) => o.dueAt),
        outcomes.map((o) => o.error),
        now(),
      ],
    );
  }

  /** Idempotency keys live 24 h (SPEC §11); older ones are dropped in small batches. */
  async function pruneIdempotencyKeys(): Promise<void> {
    await opts.pool.query(
      `DELETE FROM idempotency_keys WHERE ctid IN (
         SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT 1000)`,
      [new Date(now().getTime() - 25 * 3600_000)],
    );
  }

  /** Cancelled rows whose email.cancelled has not reached the log after 5 s. */
  async function stuckCancelling(): Promise<{ tenant_id: string; id: string }[]> {
    const { rows } = await opts.pool.query<{ tenant_id: string; id: string }>(
      `SELECT tenant_id, id FROM outgoing_emails
        WHERE state = 'cancelling' AND updated_at < $1 ORDER BY updated_at LIMIT 100`,
      [new Date(now().getTime() - 5_000)],
    );
    return rows;
  }

  /** Their email.cancelled is in the log now. */
  async function markCancelled(rows: readonly { tenant_id: string; id: string }[]): Promise<void> {
    await opts.pool.query(
      `UPDATE outgoing_emails o SET state = 'cancelled' FROM unnest($1::text[], $2::text[]) AS c(t, i)
        WHERE o.tenant_id = c.t AND o.id = c.i AND o.state = 'cancelling'`,
      [rows.map((r) => r.tenant_id), rows.map((r) => r.id)],
    );
  }

  return {
    markQueued,
    stuckCancelling,
    markCancelled,
    claim,
    withinRate,
    pruneRateCounters,
    stillMine,
    finish,
    tenantSettings: tenantSettings.of,
    pruneIdempotencyKeys,
  };
}
