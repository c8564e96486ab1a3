import type pg from 'pg';

/**
 * The send routes' controls of one send row (`outgoing_emails`): cancel (SPEC §11) and reschedule
 * (SPEC §22) of an email not yet handed to the provider. `'no_send'`: the tenant has no send row of
 * this id (the api then asks the log whether the email exists, sent by someone else).
 */

export type SendCancel = 'cancelled' | 'already_cancelled' | 'handed' | 'no_send';

/**
 * Cancels an email not yet handed to the provider: its row becomes `cancelling` (never claimed
 * again), then the caller appends email.cancelled and calls `markSendCancelled`.
 */
export async function cancelSend(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  id: string,
  at: Date,
): Promise<SendCancel> {
  const { rows } = await db.query<{ before: string | null; after: string | null; attempts: number }>(
    `WITH target AS (
       SELECT state, attempts FROM outgoing_emails WHERE tenant_id = $1 AND id = $2
     ), changed AS (
       UPDATE outgoing_emails SET state = 'cancelling', updated_at = $3
        WHERE tenant_id = $1 AND id = $2 AND state IN ('awaiting_log', 'pending') AND attempts = 0
        RETURNING state
     )
     SELECT (SELECT state FROM target) AS before, (SELECT state FROM changed) AS after,
            COALESCE((SELECT attempts FROM target), 0) AS attempts`,
    [tenantId, id, at],
  );
  const r = rows[0];
  if (!r || r.before === null) return 'no_send';
  if (r.after === 'cancelling') return 'cancelled';
  if (r.before === 'cancelling' || r.before === 'cancelled') return 'already_cancelled';
  return 'handed';
}

/** A `cancelling` send becomes `cancelled`, once its email.cancelled is appended. */
export async function markSendCancelled(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  id: string,
): Promise<void> {
  await db.query(
    `UPDATE outgoing_emails SET state = 'cancelled' WHERE tenant_id = $1 AND id = $2 AND state = 'cancelling'`,
    [tenantId, id],
  );
}

/**
 * Moves a scheduled email not yet handed to the provider to `at` (SPEC §22: Resend's update):
 * its due time and `scheduledAt` change together; `'moved'`, `'no_send'`, or `'handed'` when it
 * is not (or no longer) a scheduled email waiting for its time.
 */
export async function rescheduleSend(
  db: Pick<pg.Pool, 'query'>,
  tenantId: string,
  id: string,
  at: Date,
  now: Date,
): Promise<'moved' | 'handed' | 'no_send'> {
  const { rows } = await db.query<{ before: string | null; after: string | null }>(
    `WITH target AS (
       SELECT state FROM outgoing_emails WHERE tenant_id = $1 AND id = $2
     ), changed AS (
       UPDATE outgoing_emails SET due_at = $3, scheduled_at = $3, updated_at = $4
        WHERE tenant_id = $1 AND id = $2 AND state IN ('awaiting_log', 'pending') AND attempts = 0
          AND scheduled_at IS NOT NULL AND due_at > $4
        RETURNING state
     )
     SELECT (SELECT state FROM target) AS before, (SELECT state FROM changed) AS after`,
    [tenantId, id, at, now],
  );
  const r = rows[0];
  if (!r || r.before === null) return 'no_send';
  return r.after === null ? 'handed' : 'moved';
}
