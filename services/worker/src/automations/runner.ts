import {
  afterBranch,
  type ClaimedRun,
  claimDueRuns,
  claimInbox,
  contactMatches,
  followedTypes,
  followStream,
  handleInboxEvent,
  lockRun,
  moveRun,
  nextPath,
  RUNS_TABLE,
  type RunMove,
  recordRunStep,
  type SegmentFilter,
  setContactProperties,
  stepAt,
} from '@tern/bulk';
import { durationMs } from '@tern/contracts';
import { createLeasedJob, type LeasedJob, type LeasedJobContext } from '@tern/jobs';
import { withTransaction } from '@tern/kernel';
import {
  type BulkJobOptions,
  type BulkMail,
  bulkEmailId,
  DEFAULT_BULK_LEASE_MS,
  resolveContent,
  tryComposeMail,
} from '../bulk/mail.js';

/**
 * The automation runner (SPEC §27), on the machinery of the sequence scheduler: a leased job over
 * `automation_runs.due_at` (the due list), `FOR UPDATE SKIP LOCKED` claims and leases. Each round:
 *
 * 1. the follower copies the event stream's delivery events the tenants' automations listen to
 *    into the trigger inbox, moving each tenant's cursor in the same transaction;
 * 2. the inbox's events (contact changes, tracked events, the copied ones) start runs and end
 *    waits, each event deleted in the transaction that handles it;
 * 3. the due runs move: the step at a run's position is done and the run moves past it in ONE
 *    transaction (the claimed batch's), under the run's row lock, with the step's row in `automation_run_steps`
 *    (primary key run + path: a step is recorded once) and the step's own effect (a property
 *    update). A `send` hands its mail to the send path first, under an id derived from
 *    (tenant, run, path): a worker killed between the hand-over and the commit redoes it with the
 *    same id, which the send path drops. A lapsed lease hands the run to another worker, which
 *    redoes at most that step's hand-over, never its record.
 *
 * A run whose contact is gone (deleted, erased), unsubscribed or suppressed stops when it next moves.
 */

export const DEFAULT_AUTOMATION_LEASE_MS = DEFAULT_BULK_LEASE_MS;

export interface AutomationRunnerOptions extends BulkJobOptions {
  batchSize?: number;
  /** Stream events read per tenant and statement. */
  followPageSize?: number;
}

/** A leased job whose `runOnce` is one round now: follow, inbox, due runs until nothing is due; resolves with the emails handed over. */
export type AutomationRunner = LeasedJob;

export const automationSource = (id: string) => `automation:${id}`;

export function createAutomationRunner(opts: AutomationRunnerOptions): AutomationRunner {
  const { pool, mailer, now } = opts;
  const batchSize = opts.batchSize ?? 200;
  const followPageSize = opts.followPageSize ?? 500;

  async function follow(): Promise<void> {
    for (const [tenantId, types] of await followedTypes(pool)) {
      for (let page = 0; page < 20; page += 1) {
        const r = await withTransaction(pool, (c) => followStream(c, tenantId, types, followPageSize));
        if (r === null || !r.more) break;
      }
    }
  }

  async function inbox(at: Date, job: LeasedJobContext): Promise<number> {
    const events = await claimInbox(pool, job.owner, job.leaseUntil(at), at, batchSize);
    // One transaction per claimed batch: each event's handling and its deletion commit together.
    await withTransaction(pool, async (c) => {
      for (const e of events) await handleInboxEvent(c, e, job.owner, at);
    });
    return events.length;
  }

  /** Why a run cannot go on, or null. */
  const stopReason = (r: ClaimedRun): string | null =>
    r.steps === null || r.email === null
      ? 'erased'
      : !r.subscribed
        ? 'unsubscribed'
        : r.suppressed
          ? 'suppressed'
          : null;

  /** The mail of a run standing at a `send` step (not yet handed over in this claim). */
  async function composeSend(r: ClaimedRun, templateId: string) {
    const id = bulkEmailId(r.ordered_ids, r.due_at, r.tenant_id, 'automation', r.id, r.position!);
    const content = await resolveContent(pool, r.tenant_id, {
      templateId,
      subject: null,
      html: null,
      text: null,
    });
    if (content === null || r.from_address === null) return { id, failure: 'no_content' as const };
    const source = automationSource(r.automation_id);
    const composed = tryComposeMail({
      id,
      from: r.from_address,
      unsubscribeSource: `${source}:${r.position}`,
      tags: [source],
      templateId,
      source: content,
      recipient: {
        id: r.contact_id,
        email: r.email!,
        first_name: r.first_name,
        last_name: r.last_name,
        attributes: r.attributes ?? {},
      },
    });
    return 'mail' in composed ? { id, mail: composed.mail } : { id, failure: composed.failure };
  }

  async function moveRuns(runs: ClaimedRun[], at: Date, owner: string): Promise<number> {
    // The mail of every run at a send step goes to the send path first, per tenant in one call.
    const sends = new Map<string, { id: string; mail?: BulkMail; failure?: string }>();
    const byTenant = new Map<string, BulkMail[]>();
    for (const r of runs) {
      if (stopReason(r) !== null || r.position === null) continue;
      const step = stepAt(r.steps!, r.position);
      if (step === undefined || !('send' in step)) continue;
      const s = await composeSend(r, step.send);
      sends.set(r.id, s);
      if (s.mail) byTenant.set(r.tenant_id, [...(byTenant.get(r.tenant_id) ?? []), s.mail]);
    }
    let handed = 0;
    for (const [tenantId, mails] of byTenant) {
      await mailer.enqueue(tenantId, mails, at);
      handed += mails.length;
    }
    // The claimed runs move in one transaction (one commit per batch, not per run): each run's
    // step record, its effect and its move commit together, or none of them.
    await withTransaction(pool, async (c) => {
      for (const r of runs) await moveOne(c, r, at, owner, sends.get(r.id));
    });
    return handed;
  }

  async function moveOne(
    c: Parameters<typeof lockRun>[0],
    r: ClaimedRun,
    at: Date,
    owner: string,
    send: { id: string; mail?: BulkMail; failure?: string } | undefined,
  ): Promise<void> {
    const locked = await lockRun(c, r, owner);
    // Not ours any more (a lapsed lease), or moved since the claim: the holder does it.
    if (locked === null || locked.position !== r.position) return;
    const reason = stopReason(r);
    if (reason !== null) return moveRun(c, r, { to: 'stopped', reason }, false, at);
    const path = locked.position;
    const steps = r.steps!;
    const step = path === null ? undefined : stepAt(steps, path);
    if (path === null || step === undefined) return moveRun(c, r, { to: 'completed' }, false, at);
    const onward = (to: string | null): RunMove =>
      to === null ? { to: 'completed' } : { to: 'step', position: to, dueAt: at };
    const done = async (
      kind: string,
      outcome: string | null,
      to: string | null,
      emailId: string | null = null,
    ) => {
      if (!(await recordRunStep(c, r, { path, kind, outcome, emailId, at }))) {
        // Recorded already (cannot happen under the lock; kept as the guard): only move on.
        return moveRun(c, r, onward(to), false, at);
      }
      return moveRun(c, r, onward(to), true, at);
    };
    if ('delay' in step) {
      if (locked.waiting === 'delay') return done('delay', null, nextPath(steps, path));
      const dueAt = new Date(at.getTime() + (durationMs(step.delay) ?? 0));
      return moveRun(c, r, { to: 'wait', position: path, waiting: 'delay', dueAt }, false, at);
    }
    if ('waitFor' in step) {
      if (locked.waiting === 'event') {
        const arrived = locked.wait_arrived;
        return done(
          'waitFor',
          arrived ? 'arrived' : 'timeout',
          afterBranch(steps, path, arrived ? 'then' : 'else'),
        );
      }
      const dueAt = new Date(at.getTime() + (durationMs(step.waitFor.timeout) ?? 0));
      return moveRun(
        c,
        r,
        { to: 'wait', position: path, waiting: 'event', event: step.waitFor.event, dueAt },
        false,
        at,
      );
    }
    if ('send' in step) {
      if (send === undefined) return; // composed for another position: the next claim does it
      if (send.failure !== undefined)
        opts.logger?.warn(
          { automationId: r.automation_id, runId: r.id, position: path, reason: send.failure },
          'automation send skipped: its message could not be composed',
        );
      return done('send', send.mail ? 'queued' : 'skipped', nextPath(steps, path), send.id);
    }
    if ('if' in step) {
      const yes = await contactMatches(c, r.tenant_id, r.contact_id, step.if as SegmentFilter, at);
      return done('if', yes ? 'then' : 'else', afterBranch(steps, path, yes ? 'then' : 'else'));
    }
    if ('update' in step) {
      await setContactProperties(c, r.tenant_id, r.contact_id, step.update, at);
      return done('update', null, nextPath(steps, path));
    }
    const _exhaustive: never = step;
    return _exhaustive;
  }

  return createLeasedJob({
    name: 'automation-runner',
    pool,
    table: RUNS_TABLE,
    leaseMs: opts.leaseMs ?? DEFAULT_AUTOMATION_LEASE_MS,
    pollIntervalMs: opts.pollIntervalMs ?? 1000,
    async run(job) {
      let total = 0;
      await follow();
      // A step due at once after the one just done: loop until nothing is due.
      for (;;) {
        if (job.stopping()) return total;
        const at = now();
        const handled = await inbox(at, job);
        const runs = await claimDueRuns(pool, job.owner, job.leaseUntil(at), at, batchSize);
        if (handled === 0 && runs.length === 0) return total;
        total += await moveRuns(runs, at, job.owner);
      }
    },
    onError: (error) => opts.logger?.error({ err: error }, 'automation runner failed; retried'),
  });
}
