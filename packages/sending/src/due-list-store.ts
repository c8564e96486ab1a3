import { claimDue } from '@tern/jobs';
import type pg from 'pg';
import { deleteAttachments } from './attachments.js';
import type { StoredMessage } from './enqueue.js';

/**
 * The sender's statements on its due-list (`outgoing_emails`), each one statement: the claim of
 * due rows (a lease, `claimDue`), the hand-back of rows over a send rate, the check that a claim is
 * still this attempt's, the outcome of a round, and the cancellations whose event is not yet in
 * the log. The sender (`services/sender`) decides when; these own the SQL.
 */

/** A due row of `outgoing_emails` this instance claimed (with a lease) for one attempt. */
export type ClaimedRow = {
  tenant_id: string;
  id: string;
  attempts: number;
  message: StoredMessage;
  bulk: boolean;
};

/** A row's key in a round's sets: `tenant\u0000id`. */
export const keyOf = (r: { tenant_id: string; id: string }) => `${r.tenant_id}\u0000${r.id}`;

/** The rows whose email.queued is in the log now: `awaiting_log` → `pending`. */
export async function markSendsQueued(
  pool: pg.Pool,
  events: readonly { tenantId: string; emailId: string }[],
  at: Date,
): Promise<number> {
  if (events.length === 0) return 0;
  const { rowCount } = await pool.query(
    `UPDATE outgoing_emails o SET state = 'pending', updated_at = $3
       FROM unnest($1::text[], $2::text[]) AS q(t, i)
      WHERE o.tenant_id = q.t AND o.id = q.i AND o.state = 'awaiting_log'`,
    [events.map((e) => e.tenantId), events.map((e) => e.emailId), at],
  );
  return rowCount ?? 0;
}

/**
 * Claims due rows (SPEC §23): transactional mail of every tenant ahead of campaign and sequence
 * mail, then by due time; tenants in `exhausted` (send rate used up for this second) are left out.
 */
export async function claimDueSends(
  pool: Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>,
  q: { at: Date; leaseMs: number; limit: number; exhausted: ReadonlySet<string> },
): Promise<ClaimedRow[]> {
  return claimDue<ClaimedRow>(
    pool,
    {
      table: 'outgoing_emails',
      alias: 'o',
      keys: ['tenant_id', 'id'],
      // One scan per state: the pending one walks `outgoing_emails_claim_idx` (bulk, due_at) and
      // stops at the limit, the lapsed-lease one reads the few rows in `sending`.
      due: [
        `state = 'pending' AND due_at <= $1 AND NOT (tenant_id = ANY($4::text[]))`,
        `state = 'sending' AND lease_until < $1 AND NOT (tenant_id = ANY($4::text[]))`,
      ],
      orderBy: 'bulk, due_at',
      limit: '$3',
      set: `state = 'sending', attempts = o.attempts + 1, lease_until = $2, updated_at = $1`,
      returning: 'o.tenant_id, o.id, o.attempts, o.message, o.bulk',
    },
    [q.at, new Date(q.at.getTime() + q.leaseMs), q.limit, [...q.exhausted]],
  );
}

/** Claimed rows given back unattempted (over a send rate): pending again, due at `dueAt`. */
export async function unclaimSends(
  pool: pg.Pool,
  rows: readonly ClaimedRow[],
  q: { dueAt: Date; at: Date },
): Promise<void> {
  if (rows.length === 0) return;
  await pool.query(
    `UPDATE outgoing_emails o
        SET state = 'pending', attempts = o.attempts - 1, lease_until = NULL, due_at = $3, updated_at = $4
       FROM unnest($1::text[], $2::text[]) AS r(t, i)
      WHERE o.tenant_id = r.t AND o.id = r.i AND o.state = 'sending'`,
    [rows.map((r) => r.tenant_id), rows.map((r) => r.id), q.dueAt, q.at],
  );
}

/** The rows still claimed by this attempt (same `attempts`, still `sending`), as `tenant\u0000id`. */
export async function stillClaimed(pool: pg.Pool, rows: readonly ClaimedRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const { rows: mine } = await pool.query<{ tenant_id: string; id: string }>(
    `SELECT o.tenant_id, o.id FROM outgoing_emails o
       JOIN unnest($1::text[], $2::text[], $3::int[]) AS q(t, i, a)
         ON o.tenant_id = q.t AND o.id = q.i AND o.attempts = q.a
      WHERE o.state = 'sending'`,
    [rows.map((r) => r.tenant_id), rows.map((r) => r.id), rows.map((r) => r.attempts)],
  );
  return new Set(mine.map(keyOf));
}

/** One row's end of an attempt: done, or due again at `dueAt` (null keeps its due time), and its events. */
export interface SendFinish {
  row: { tenant_id: string; id: string; attempts: number };
  state: 'done' | 'pending';
  dueAt: Date | null;
  error: string | null;
  /** The attempt's outcome events (DeliveryEvents), kept in `send_outcomes` until they are in the log. */
  events: readonly unknown[];
}

/** An attempt's outcome events waiting for the log (`send_outcomes`). */
export interface PendingOutcome {
  tenant_id: string;
  email_id: string;
  attempt: number;
  events: unknown[];
}

/**
 * Marks the rows of a round done or due again and records their outcome events in
 * `send_outcomes`, in one statement (issue 49, item 1): only rows this attempt still holds (still
 * `sending`, same `attempts`; a lapsed lease's row belongs to the attempt that claimed it again).
 * Returns the outcomes recorded: the caller appends them, then `clearOutcomes`.
 */
export async function finishSends(
  pool: pg.Pool,
  outcomes: readonly SendFinish[],
  at: Date,
): Promise<PendingOutcome[]> {
  if (outcomes.length === 0) return [];
  const { rows } = await pool.query<PendingOutcome>(
    `WITH f AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[], $6::text[], $7::jsonb[])
         AS f(t, i, a, state, due, err, ev)),
     finished AS (
       UPDATE outgoing_emails o
          SET state = f.state, due_at = COALESCE(f.due, o.due_at), lease_until = NULL, last_error = f.err,
              updated_at = $8
         FROM f
        WHERE o.tenant_id = f.t AND o.id = f.i AND o.attempts = f.a AND o.state = 'sending'
       RETURNING o.tenant_id, o.id, o.attempts)
     INSERT INTO send_outcomes (tenant_id, email_id, attempt, events, created_at)
     SELECT f.t, f.i, f.a, f.ev, $8 FROM f JOIN finished d ON d.tenant_id = f.t AND d.id = f.i AND d.attempts = f.a
      WHERE jsonb_array_length(f.ev) > 0
     ON CONFLICT (tenant_id, email_id, attempt) DO NOTHING
     RETURNING tenant_id, email_id, attempt, events`,
    [
      outcomes.map((o) => o.row.tenant_id),
      outcomes.map((o) => o.row.id),
      outcomes.map((o) => o.row.attempts),
      outcomes.map((o) => o.state),
      outcomes.map((o) => o.dueAt),
      outcomes.map((o) => o.error),
      outcomes.map((o) => JSON.stringify(o.events)),
      at,
    ],
  );
  return rows;
}

/** Outcomes recorded before `before` and not yet in the log, oldest first (at most `limit`). */
export async function pendingOutcomes(pool: pg.Pool, before: Date, limit: number): Promise<PendingOutcome[]> {
  const { rows } = await pool.query<PendingOutcome>(
    `SELECT tenant_id, email_id, attempt, events FROM send_outcomes
      WHERE created_at < $1 ORDER BY created_at LIMIT $2`,
    [before, limit],
  );
  return rows;
}

/** These outcomes are in the log now: their rows of `send_outcomes` go. */
export async function clearOutcomes(
  pool: pg.Pool,
  outcomes: readonly { tenant_id: string; email_id: string; attempt: number }[],
): Promise<void> {
  if (outcomes.length === 0) return;
  await pool.query(
    `DELETE FROM send_outcomes s USING unnest($1::text[], $2::text[], $3::int[]) AS c(t, i, a)
      WHERE s.tenant_id = c.t AND s.email_id = c.i AND s.attempt = c.a`,
    [outcomes.map((o) => o.tenant_id), outcomes.map((o) => o.email_id), outcomes.map((o) => o.attempt)],
  );
}

/**
 * Rows left `awaiting_log` since before `before` (issue 49, item 2): a request that died between
 * writing them and appending their email.queued. Called only once the sender's consumer has read
 * the whole log (lag 0), which moves every row whose email.queued is there: these have none, and
 * nothing was accepted. Deleted with their attachment bytes (at most `limit` a call).
 */
export async function sweepUnqueuedSends(
  pool: pg.Pool,
  before: Date,
  limit: number,
): Promise<{ tenant_id: string; id: string }[]> {
  const { rows } = await pool.query<{ tenant_id: string; id: string }>(
    `DELETE FROM outgoing_emails o USING (
       SELECT tenant_id, id FROM outgoing_emails
        WHERE state = 'awaiting_log' AND updated_at < $1 ORDER BY updated_at LIMIT $2) d
      WHERE o.tenant_id = d.tenant_id AND o.id = d.id AND o.state = 'awaiting_log'
      RETURNING o.tenant_id, o.id`,
    [before, limit],
  );
  const byTenant = new Map<string, string[]>();
  for (const r of rows) byTenant.set(r.tenant_id, [...(byTenant.get(r.tenant_id) ?? []), r.id]);
  for (const [tenant, ids] of byTenant) await deleteAttachments(pool, tenant, ids);
  return rows;
}

/** Cancelled rows (`cancelling`) last changed before `before`: their email.cancelled is not in the log yet. */
export async function stuckCancellingSends(
  pool: pg.Pool,
  before: Date,
): Promise<{ tenant_id: string; id: string }[]> {
  const { rows } = await pool.query<{ tenant_id: string; id: string }>(
    `SELECT tenant_id, id FROM outgoing_emails
      WHERE state = 'cancelling' AND updated_at < $1 ORDER BY updated_at LIMIT 100`,
    [before],
  );
  return rows;
}

/** Their email.cancelled is in the log now: `cancelling` → `cancelled`. */
export async function markSendsCancelled(
  pool: pg.Pool,
  rows: readonly { tenant_id: string; id: string }[],
): Promise<void> {
  await pool.query(
    `UPDATE outgoing_emails o SET state = 'cancelled' FROM unnest($1::text[], $2::text[]) AS c(t, i)
      WHERE o.tenant_id = c.t AND o.id = c.i AND o.state = 'cancelling'`,
    [rows.map((r) => r.tenant_id), rows.map((r) => r.id)],
  );
}
