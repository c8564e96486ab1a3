import { randomBytes } from 'node:crypto';
import type { Logger } from '@tern/jobs';
import { claimDueSql, createPoller } from '@tern/jobs';
import type pg from 'pg';
import { type BulkMailer, derivedEmailId, resolveContent, tryComposeMail } from '../bulk/mail.js';
import { type StoredStep, sequenceSource } from './store.js';

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

/**
 * How long a claimed job stays another worker's. Each chunk renews it; a worker killed mid-way
 * hands its job over after this long. A worker slower than that loses the job to another, which
 * repeats at most the chunk in flight (same email ids: no effect).
 */
export const DEFAULT_SEQUENCE_LEASE_MS = 15_000;

export interface SequenceSchedulerOptions {
  pool: pg.Pool;
  mailer: BulkMailer;
  now: () => Date;
  publicUrl: string;
  trackingSecret: string;
  batchSize?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
  logger?: Logger;
}

export interface SequenceScheduler {
  /** Sends every step that is due now; resolves with the emails handed over. */
  runOnce(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

interface Claimed {
  tenant_id: string;
  id: string;
  sequence_id: string;
  contact_id: string;
  next_step: number;
  next_due_at: Date;
  steps: StoredStep[] | null;
  from_address: string | null;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: Record<string, unknown> | null;
  subscribed: boolean | null;
  suppressed: boolean;
}

export function createSequenceScheduler(opts: SequenceSchedulerOptions): SequenceScheduler {
  const { pool, mailer, now } = opts;
  const batchSize = opts.batchSize ?? 100;
  const leaseMs = opts.leaseMs ?? DEFAULT_SEQUENCE_LEASE_MS;
  const owner = `sequences-${randomBytes(8).toString('hex')}`;
  let stopped = false;

  async function claim(at: Date): Promise<Claimed[]> {
    const { rows } = await pool.query<Claimed>(
      `WITH claimed AS (${claimDueSql({
        table: 'sequence_enrollments',
        alias: 'e',
        keys: ['tenant_id', 'id'],
        due: `state = 'active' AND next_due_at <= $3 AND (lease_until IS NULL OR lease_until < $3)`,
        orderBy: 'next_due_at',
        limit: '$4',
        set: 'lease_owner = $1, lease_until = $2',
        returning: 'e.tenant_id, e.id, e.sequence_id, e.contact_id, e.next_step, e.next_due_at',
      })})
       SELECT c.*, s.steps, s.from_address, ct.email, ct.first_name, ct.last_name, ct.attributes, ct.subscribed,
              EXISTS (SELECT 1 FROM suppressions x WHERE x.tenant_id = ct.tenant_id AND x.email = ct.email) AS suppressed
         FROM claimed c
         LEFT JOIN sequences s ON s.tenant_id = c.tenant_id AND s.id = c.sequence_id
         LEFT JOIN contacts ct ON ct.tenant_id = c.tenant_id AND ct.id = c.contact_id
        ORDER BY c.next_due_at`,
      [owner, new Date(at.getTime() + leaseMs), at, batchSize],
    );
    return rows;
  }

  async function stop(e: Claimed, reason: string, at: Date) {
    await pool.query(
      `UPDATE sequence_enrollments SET state = 'stopped', stop_reason = $3, next_due_at = NULL,
              lease_owner = NULL, lease_until = NULL, updated_at = $4
        WHERE tenant_id = $1 AND id = $2 AND lease_owner = $5 AND state = 'active'`,
      [e.tenant_id, e.id, reason, at, owner],
    );
  }

  async function sendStep(e: Claimed, at: Date): Promise<number> {
    const steps = e.steps;
    if (steps === null || e.email === null) {
      await stop(e, 'erased', at);
      return 0;
    }
    if (!e.subscribed) {
      await stop(e, 'unsubscribed', at);
      return 0;
    }
    if (e.suppressed) {
      await stop(e, 'suppressed', at);
      return 0;
    }
    const k = e.next_step;
    const step = steps[k];
    let sent = 0;
    if (step !== undefined) {
      const source = sequenceSource(e.sequence_id);
      const content = await resolveContent(pool, e.tenant_id, step);
      if (content !== null) {
        const id = derivedEmailId(e.tenant_id, source, e.id, String(k));
        const composed = tryComposeMail({
          tenantId: e.tenant_id,
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
          publicUrl: opts.publicUrl,
          trackingSecret: opts.trackingSecret,
        });
        // A message that cannot be composed is skipped and counted (stats.failed); the enrollment
        // goes on to its next step (issue 24, item 3).
        const failure = 'mail' in composed ? null : composed.failure;
        await pool.query(
          `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at, failed_reason)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant_id, email_id) DO NOTHING`,
          [e.tenant_id, id, source, k, e.contact_id, at, failure],
        );
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
    await pool.query(
      `UPDATE sequence_enrollments
          SET next_step = $3, state = $4, next_due_at = $5, lease_owner = NULL, lease_until = NULL, updated_at = $6
        WHERE tenant_id = $1 AND id = $2 AND lease_owner = $7 AND state = 'active' AND next_step = $8`,
      [
        e.tenant_id,
        e.id,
        k + 1,
        next === undefined ? 'completed' : 'active',
        next === undefined ? null : new Date(e.next_due_at.getTime() + next.delayMinutes * 60_000),
        at,
        owner,
        k,
      ],
    );
    return sent;
  }

  async function runOnce(): Promise<number> {
    let total = 0;
    // A step with no delay after the one just sent is due at once: loop until nothing is due.
    for (;;) {
      if (stopped) return total;
      const at = now();
      const claimed = await claim(at);
      if (claimed.length === 0) return total;
      for (const e of claimed) total += await sendStep(e, at);
    }
  }

  const pollIntervalMs = opts.pollIntervalMs ?? 1000;
  const poller = createPoller({
    name: 'sequence-scheduler',
    intervalMs: pollIntervalMs,
    firstRunMs: pollIntervalMs,
    run: runOnce,
    onError: (error) => opts.logger?.error({ err: error }, 'sequence scheduler failed; retried'),
  });

  return {
    runOnce,
    start() {
      stopped = false;
      poller.start();
    },
    async stop() {
      stopped = true;
      await poller.stop();
      await pool
        .query(
          `UPDATE sequence_enrollments SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1`,
          [owner],
        )
        .catch(() => undefined);
    },
  };
}
