import type { AutomationStep } from '@tern/contracts';
import { leaseClaim } from '@tern/jobs';
import { suppressedSql } from '@tern/read-models';
import type pg from 'pg';
import { compileSegmentFilter, type SegmentFilter } from '../segments/filter.js';

/**
 * The statements of the automation runner (SPEC §27; the job is services/worker): the claim of
 * due runs with their automation and contact, a run's move under its lock with the step it did,
 * and the contact's match and update (the trigger inbox: `inbox-store.ts`).
 */

/** The tables whose rows carry the runner's leases (`createLeasedJob` hands them back on stop). */
export const RUNS_TABLE = 'automation_runs';
export const INBOX_TABLE = 'automation_inbox';

/** A claimed run with its automation and contact (null fields: gone since). */
export interface ClaimedRun {
  tenant_id: string;
  id: string;
  automation_id: string;
  contact_id: string;
  position: string | null;
  waiting: 'delay' | 'event' | null;
  due_at: Date;
  /** Send-step email ids start with `due_at` (migration 0550); false: hashed, as made before it. */
  ordered_ids: boolean;
  steps: AutomationStep[] | null;
  from_address: string | null;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  attributes: Record<string, unknown> | null;
  audiences: string[] | null;
  subscribed: boolean | null;
  suppressed: boolean;
}

/** Claims up to `batchSize` due runs (`FOR UPDATE SKIP LOCKED`, a lease), oldest due first. */
export const claimDueRuns = leaseClaim<ClaimedRun>({
  table: RUNS_TABLE,
  alias: 'r',
  ready: `state = 'active' AND due_at <= $3`,
  orderBy: 'due_at',
  returning:
    'r.tenant_id, r.id, r.automation_id, r.contact_id, r.position, r.waiting, r.due_at, r.ordered_ids',
  around: (claim) => `WITH claimed AS (${claim})
     SELECT c.*, a.steps, a.from_address, ct.email, ct.first_name, ct.last_name, ct.attributes, ct.audiences,
            ct.subscribed, ${suppressedSql('ct.tenant_id', 'ct.email')} AS suppressed
       FROM claimed c
       LEFT JOIN automations a ON a.tenant_id = c.tenant_id AND a.id = c.automation_id
       LEFT JOIN contacts ct ON ct.tenant_id = c.tenant_id AND ct.id = c.contact_id
      ORDER BY c.due_at`,
});

/** The run as its lock holder sees it, or null when this owner no longer holds it active. */
export interface LockedRun {
  position: string | null;
  waiting: 'delay' | 'event' | null;
  wait_arrived: boolean;
}

/** Locks the run (`FOR UPDATE`) in the caller's transaction, if this owner still holds it. */
export async function lockRun(
  client: pg.ClientBase,
  run: Pick<ClaimedRun, 'tenant_id' | 'id'>,
  owner: string,
): Promise<LockedRun | null> {
  const { rows } = await client.query<LockedRun>(
    `SELECT position, waiting, wait_arrived FROM automation_runs
      WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND state = 'active' FOR UPDATE`,
    [run.tenant_id, run.id, owner],
  );
  return rows[0] ?? null;
}

/** Records the step done at `path` (the primary key: once per run and path); false when it already was. */
export async function recordRunStep(
  client: pg.ClientBase,
  run: Pick<ClaimedRun, 'tenant_id' | 'id'>,
  step: { path: string; kind: string; outcome: string | null; emailId: string | null; at: Date },
): Promise<boolean> {
  const r = await client.query(
    `INSERT INTO automation_run_steps (tenant_id, run_id, path, kind, outcome, email_id, done_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [run.tenant_id, run.id, step.path, step.kind, step.outcome, step.emailId, step.at],
  );
  return (r.rowCount ?? 0) === 1;
}

/** Where a run goes: a step due at once, a wait, the end, or a stop. */
export type RunMove =
  | { to: 'step'; position: string; dueAt: Date }
  | { to: 'wait'; position: string; waiting: 'delay'; dueAt: Date }
  | { to: 'wait'; position: string; waiting: 'event'; event: string; dueAt: Date }
  | { to: 'completed' }
  | { to: 'stopped'; reason: string };

/** Moves the locked run (lease released: the next claim takes it when due); `stepDone` counts a step. */
export async function moveRun(
  client: pg.ClientBase,
  run: Pick<ClaimedRun, 'tenant_id' | 'id'>,
  move: RunMove,
  stepDone: boolean,
  at: Date,
): Promise<void> {
  const over = move.to === 'completed' || move.to === 'stopped';
  await client.query(
    `UPDATE automation_runs
        SET state = $3, stop_reason = $4, position = $5, waiting = $6, wait_event = $7,
            wait_since = CASE WHEN $7::text IS NULL THEN NULL ELSE $9::timestamptz END, wait_arrived = false,
            due_at = $8, steps_done = steps_done + $10, lease_owner = NULL, lease_until = NULL, updated_at = $9
      WHERE tenant_id = $1 AND id = $2`,
    [
      run.tenant_id,
      run.id,
      move.to === 'completed' ? 'completed' : move.to === 'stopped' ? 'stopped' : 'active',
      move.to === 'stopped' ? move.reason : null,
      over ? null : move.position,
      move.to === 'wait' ? move.waiting : null,
      move.to === 'wait' && move.waiting === 'event' ? move.event : null,
      over ? null : move.dueAt,
      at,
      stepDone ? 1 : 0,
    ],
  );
}

/**
 * An `if` step: whether the contact matches the segment filter now (packages/bulk's
 * `compileSegmentFilter`, the predicate segments and campaigns use), in the caller's transaction.
 */
export async function contactMatches(
  client: pg.ClientBase,
  tenantId: string,
  contactId: string,
  filter: SegmentFilter,
  at: Date,
): Promise<boolean> {
  const params: unknown[] = [contactId];
  const where = compileSegmentFilter(filter, { tenantId, params, at });
  const { rows } = await client.query<{ yes: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM contacts c WHERE c.id = $1 AND ${where}) AS yes`,
    params,
  );
  return rows[0]?.yes === true;
}

/** An `update` step: merges the properties into the contact's `properties` (null removes one). */
export async function setContactProperties(
  client: pg.ClientBase,
  tenantId: string,
  contactId: string,
  properties: Record<string, string | number | boolean | null>,
  at: Date,
): Promise<void> {
  const removed = Object.keys(properties).filter((k) => properties[k] === null);
  const set = Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== null));
  await client.query(
    `UPDATE contacts SET properties = (properties - $4::text[]) || $3::jsonb, updated_at = $5
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, contactId, JSON.stringify(set), removed, at],
  );
}

// ---- the trigger inbox ---------------------------------------------------------------------
