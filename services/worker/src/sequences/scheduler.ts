import {
  advanceEnrollment,
  type ClaimedEnrollment,
  claimDueEnrollments,
  recordStepEmail,
  SCHEDULE_TABLE,
  sequenceSource,
  stopEnrollment,
} from '@tern/bulk';
import { createLeasedJob, type LeasedJob, type LeasedJobContext } from '@tern/jobs';
import {
  type BulkJobOptions,
  bulkEmailId,
  DEFAULT_BULK_LEASE_MS,
  resolveContent,
  tryComposeMail,
} from '../bulk/mail.js';

/**
 * The sequence scheduler (SPEC §15): the durable schedule is `sequence_enrollments.next_due_at`.
 * Each pass claims the due enrollments (`FOR UPDATE SKIP LOCKED`, a lease), and for each one:
 * the contact gone (deleted or erased) → `stopped/erased`; unsubscribed → `stopped/unsubscribed`;
 * suppressed → `stopped/suppressed`; otherwise step *k* goes to the send path under an id derived
 * from (tenant, enrollment, k), and the enrollment moves to step *k+1*, due at the previous due
 * time + its delay (so step *k* falls at enrollment + Σ delays up to *k*, whatever the worker's lag),
 * or `completed`. A crash between the send and the move repeats the same email id: dropped
 * downstream.
 */

/** The scheduler's lease (`DEFAULT_BULK_LEASE_MS`). */
export const DEFAULT_SEQUENCE_LEASE_MS = DEFAULT_BULK_LEASE_MS;

export interface SequenceSchedulerOptions extends BulkJobOptions {
  batchSize?: number;
}

/** A leased job whose `runOnce` sends every step that is due now; resolves with the emails handed over. */
export type SequenceScheduler = LeasedJob;

export function createSequenceScheduler(opts: SequenceSchedulerOptions): SequenceScheduler {
  const { pool, mailer, now } = opts;
  const batchSize = opts.batchSize ?? 100;
  const leaseMs = opts.leaseMs ?? DEFAULT_SEQUENCE_LEASE_MS;

  async function claim(at: Date, { owner, leaseUntil }: LeasedJobContext): Promise<ClaimedEnrollment[]> {
    return claimDueEnrollments(pool, owner, leaseUntil(at), at, batchSize);
  }

  const stop = (e: ClaimedEnrollment, reason: string, at: Date, owner: string) =>
    stopEnrollment(pool, e, reason, at, owner);

  async function sendStep(e: ClaimedEnrollment, at: Date, owner: string): Promise<number> {
    const steps = e.steps;
    if (steps === null || e.email === null) {
      await stop(e, 'erased', at, owner);
      return 0;
    }
    if (!e.subscribed) {
      await stop(e, 'unsubscribed', at, owner);
      return 0;
    }
    if (e.suppressed) {
      await stop(e, 'suppressed', at, owner);
      return 0;
    }
    const k = e.next_step;
    const step = steps[k];
    let sent = 0;
    if (step !== undefined) {
      const source = sequenceSource(e.sequence_id);
      const content = await resolveContent(pool, e.tenant_id, step);
      if (content !== null) {
        const id = bulkEmailId(e.ordered_ids, e.next_due_at, e.tenant_id, source, e.id, String(k));
        const composed = tryComposeMail({
          id,
          from: e.from_address!,
          unsubscribeSource: `${source}:${k}`,
          tags: [source, `step:${k + 1}`],
          templateId: step.templateId,
          source: content,
          recipient: {
            id: e.contact_id,
            email: e.email,
            first_name: e.first_name,
            last_name: e.last_name,
            attributes: e.attributes ?? {},
          },
        });
        // A message that cannot be composed is skipped and counted (stats.failed); the enrollment
        // goes on to its next step (issue 24, item 3).
        const failure = 'mail' in composed ? null : composed.failure;
        await recordStepEmail(pool, e, { id, source, step: k, at, failedReason: failure });
        if ('mail' in composed) {
          await mailer.enqueue(e.tenant_id, [composed.mail], at);
          sent = 1;
        } else {
          opts.logger?.warn(
            { sequenceId: e.sequence_id, contactId: e.contact_id, step: k, reason: failure },
            'sequence step skipped: its message could not be composed',
          );
        }
      }
    }
    const next = steps[k + 1];
    await advanceEnrollment(pool, e, {
      step: k,
      nextDueAt: next === undefined ? null : new Date(e.next_due_at.getTime() + next.delayMinutes * 60_000),
      at,
      owner,
    });
    return sent;
  }

  return createLeasedJob({
    name: 'sequence-scheduler',
    pool,
    table: SCHEDULE_TABLE,
    leaseMs,
    pollIntervalMs: opts.pollIntervalMs ?? 1000,
    async run(job) {
      let total = 0;
      // A step with no delay after the one just sent is due at once: loop until nothing is due.
      for (;;) {
        if (job.stopping()) return total;
        const at = now();
        const claimed = await claim(at, job);
        if (claimed.length === 0) return total;
        for (const e of claimed) total += await sendStep(e, at, job.owner);
      }
    },
    onError: (error) => opts.logger?.error({ err: error }, 'sequence scheduler failed; retried'),
  });
}
