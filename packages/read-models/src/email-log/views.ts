import type { DeliveryEvent, EmailStatus } from '@tern/contracts';
import { type EmailState, emailKey, evolve, initialEmailState } from '@tern/domain';
import type pg from 'pg';
import { amongIds } from './days.js';
import { fullStateSql } from './stored-state.js';

/**
 * What another service may know of an email from the log, as of one of its events (the
 * dispatcher's webhook bodies, SPEC §17): the email's projected state with this event folded in,
 * so the status is right even when the projector has not applied the event yet. The fold over
 * `email_logs.state` stays here, with the table's owner.
 */
export interface EmailView {
  /** The projection knew the email's `email.queued` (its recipient and subject). */
  projected: boolean;
  projectId: string | null;
  to: string | null;
  subject: string | null;
  tags: string[];
  status: EmailStatus | null;
}

/**
 * The projected state of every folded email, as a relation `(tenant_id, id, state)`: what
 * `emailViewsAt` reads. Another owner's statement that joins it by ids it does not know while it
 * plans reads every day of the log (`amongIds`): read the views by their ids instead.
 */
export const projectedEmailStateSql = `(SELECT e.tenant_id, e.id, ${fullStateSql('e')} AS state FROM email_logs e WHERE e.version > 0)`;

/**
 * The view of each event's email as of that event, by `emailKey(tenantId, event id)`; one query,
 * pruned to the days of the events' emails (the dispatcher's bodies, SPEC §17).
 */
export async function emailViewsAt(
  db: pg.Pool | pg.ClientBase,
  events: readonly DeliveryEvent[],
): Promise<Map<string, EmailView>> {
  const out = new Map<string, EmailView>();
  if (events.length === 0) return out;
  const { rows } = await db.query<{ tenant_id: string; id: string; state: EmailState }>(
    `SELECT l.tenant_id, l.id, l.state FROM ${projectedEmailStateSql} l
       JOIN unnest($1::text[], $2::text[]) AS u(t, i) ON l.tenant_id = u.t AND l.id = u.i
      WHERE ${amongIds('l', '$2')}`,
    [events.map((e) => e.tenantId), events.map((e) => e.emailId)],
  );
  const stored = new Map(rows.map((r) => [emailKey(r.tenant_id, r.id), r.state]));
  for (const event of events) {
    const projected = stored.get(emailKey(event.tenantId, event.emailId)) ?? null;
    out.set(emailKey(event.tenantId, event.id), viewAt(projected, event));
  }
  return out;
}

/** The view of an email whose projected state is `projected` (null: not folded yet), as of `event`. */
export function viewAt(projected: EmailState | null, event: DeliveryEvent): EmailView {
  const state = evolve(projected ?? initialEmailState(event.tenantId, event.emailId), event);
  return {
    projected: (projected?.queued ?? null) !== null,
    projectId: state.queued?.projectId ?? null,
    to: state.queued?.toEmail ?? null,
    subject: state.queued?.subject ?? null,
    tags: state.queued?.tags ?? [],
    status: state.status,
  };
}
