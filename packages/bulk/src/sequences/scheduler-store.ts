import { leaseClaim } from '@tern/jobs';
import { suppressedSql } from '@tern/read-models';
import type pg from 'pg';
import { topicSubscribedSql } from '../topics/store.js';
import type { StoredStep } from './store.js';

/**
 * The statements of the sequence scheduler (SPEC §15; the job is services/worker): the claim of
 * due enrollments with their contact, the stop of one, a step's `bulk_emails` row and the move to
 * the next step.
 */

/** The table whose rows carry the scheduler's lease (`createLeasedJob` hands them back on stop). */
export const SCHEDULE_TABLE = 'sequence_enrollments';

/** A claimed enrollment with its sequence's steps and its contact (null fields: gone since). */
export interface ClaimedEnrollment {
  tenant_id: string;
  id: string;
  sequence_id: string;
  contact_id: string;
  next_step: number;
  next_due_at: Date;
  /** Step email ids start with `next_due_at` (migration 0540); false: hashed, as made before it. */
  ordered_ids: boolean;
  steps: StoredStep[] | null;
  from_address: string | null;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: Record<string, unknown> | null;
  subscribed: boolean | null;
  suppressed: boolean;
}

/** Claims up to `batchSize` due enrollments (`FOR UPDATE SKIP LOCKED`, a lease), oldest due first. */
export const claimDueEnrollments = leaseClaim<ClaimedEnrollment>({
  table: SCHEDULE_TABLE,
  alias: 'e',
  ready: `state = 'active' AND next_due_at <= $3`,
  orderBy: 'next_due_at',
  returning: 'e.tenant_id, e.id, e.sequence_id, e.contact_id, e.next_step, e.next_due_at, e.ordered_ids',
  around: (claim) => `WITH claimed AS (${claim})
     SELECT c.*, s.steps, s.from_address, ct.email, ct.first_name, ct.last_name, ct.attributes,
            -- A sequence naming a topic (SPEC §27) reaches its subscribers only: opted out = unsubscribed.
            (ct.subscribed AND (s.topic_id IS NULL OR ${topicSubscribedSql('ct', 'c.tenant_id', 's.topic_id')})) AS subscribed,
            ${suppressedSql('ct.tenant_id', 'ct.email')} AS suppressed
       FROM claimed c
       LEFT JOIN sequences s ON s.tenant_id = c.tenant_id AND s.id = c.sequence_id
       LEFT JOIN contacts ct ON ct.tenant_id = c.tenant_id AND ct.id = c.contact_id
      ORDER BY c.next_due_at`,
});

/** Stops an active enrollment this owner holds (`erased`, `unsubscribed`, `suppressed`). */
export async function stopEnrollment(
  pool: Pick<pg.Pool, 'query'>,
  e: ClaimedEnrollment,
  reason: string,
  at: Date,
  owner: string,
): Promise<void> {
  await pool.query(
    `UPDATE sequence_enrollments SET state = 'stopped', stop_reason = $3, next_due_at = NULL,
            lease_owner = NULL, lease_until = NULL, updated_at = $4
      WHERE tenant_id = $1 AND id = $2 AND lease_owner = $5 AND state = 'active'`,
    [e.tenant_id, e.id, reason, at, owner],
  );
}

/** The `bulk_emails` row of step `step`, `ON CONFLICT DO NOTHING` (a repeat keeps the first). */
export async function recordStepEmail(
  pool: Pick<pg.Pool, 'query'>,
  e: ClaimedEnrollment,
  email: { id: string; source: string; step: number; at: Date; failedReason: string | null },
): Promise<void> {
  await pool.query(
    `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at, failed_reason)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, email_id) DO NOTHING`,
    [e.tenant_id, email.id, email.source, email.step, e.contact_id, email.at, email.failedReason],
  );
}

/**
 * Moves the enrollment from step `step` to the next (due at `nextDueAt`), or to `completed` when
 * `nextDueAt` is null; only while this owner holds it and it is still at that step.
 */
export async function advanceEnrollment(
  pool: Pick<pg.Pool, 'query'>,
  e: ClaimedEnrollment,
  move: { step: number; nextDueAt: Date | null; at: Date; owner: string },
): Promise<void> {
  await pool.query(
    `UPDATE sequence_enrollments
        SET next_step = $3, state = $4, next_due_at = $5, lease_owner = NULL, lease_until = NULL, updated_at = $6
      WHERE tenant_id = $1 AND id = $2 AND lease_owner = $7 AND state = 'active' AND next_step = $8`,
    [
      e.tenant_id,
      e.id,
      move.step + 1,
      move.nextDueAt === null ? 'completed' : 'active',
      move.nextDueAt,
      move.at,
      move.owner,
      move.step,
    ],
  );
}
