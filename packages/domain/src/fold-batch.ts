import type { DeliveryEvent } from '@tern/contracts';
import { type AnalyticsDelta, aggregateDeltas, diffContributions } from './analytics.js';
import { aggregateDimDeltas, type DimDelta, diffDimContributions } from './analytics-dims.js';
import { type EmailState, evolve, initialEmailState } from './email-fold.js';

/** `tenantId`, NUL, `id`: one key per email (or per event id) of a tenant. */
export const emailKey = (tenantId: string, id: string): string => `${tenantId}\u0000${id}`;

/** The events of one email in a batch, in log order. */
export interface EmailGroup {
  tenantId: string;
  emailId: string;
  events: DeliveryEvent[];
}

/** One email's change in a batch: its state before (null: never folded) and after. */
export interface FoldedEmail {
  tenantId: string;
  emailId: string;
  before: EmailState | null;
  after: EmailState;
  /** This batch's events of the email, in log order. */
  events: readonly DeliveryEvent[];
}

export interface FoldedBatch {
  /** Every email of the batch, in (tenant, email) order: the order rows are locked and written in. */
  emails: FoldedEmail[];
  /** The rollup change of the batch, summed per (tenant, day, template, project). */
  deltas: AnalyticsDelta[];
  /** The sliceable rollup's change (SPEC §26, `analytics-dims.ts`), summed per (tenant, dimensions). */
  dimDeltas: DimDelta[];
}

/** The mailbox provider of a recipient address (SPEC §26), resolved before the fold; absent: `other`. */
export type MailboxOf = (toEmail: string | null) => string;

/**
 * The batch's events grouped by email, each group in log order, the groups sorted by (tenant,
 * email): concurrent batches lock the same emails in the same order.
 */
export function groupByEmail(events: readonly DeliveryEvent[]): EmailGroup[] {
  const byEmail = new Map<string, EmailGroup>();
  for (const e of events) {
    const k = emailKey(e.tenantId, e.emailId);
    const group = byEmail.get(k);
    if (group) group.events.push(e);
    else byEmail.set(k, { tenantId: e.tenantId, emailId: e.emailId, events: [e] });
  }
  return [...byEmail.values()].sort((a, b) =>
    a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.emailId < b.emailId ? -1 : 1,
  );
}

/**
 * The fold of one batch (pure): each email's state before (`stateOf`, null for an email never
 * folded) evolved by its events, and the rollup deltas of those changes. Every read model is
 * written from this (services/projector, packages/read-models); the bench measures it as is.
 */
export function foldBatch(
  groups: readonly EmailGroup[],
  stateOf: (tenantId: string, emailId: string) => EmailState | null,
  mailboxOf?: MailboxOf,
): FoldedBatch {
  const emails: FoldedEmail[] = [];
  const deltas: AnalyticsDelta[] = [];
  const dimDeltas: DimDelta[] = [];
  for (const { tenantId, emailId, events } of groups) {
    const before = stateOf(tenantId, emailId);
    let after = before ?? initialEmailState(tenantId, emailId);
    for (const event of events) after = evolve(after, event);
    // The provider is decided once, when the email is first known queued, and kept (without a
    // lookup the state stays without one and counts as `other`).
    if (mailboxOf !== undefined && after.queued !== null && after.dims?.mailbox === undefined)
      after = { ...after, dims: { ...after.dims, mailbox: mailboxOf(after.queued.toEmail) } };
    deltas.push(...diffContributions(before, after));
    dimDeltas.push(...diffDimContributions(before, after));
    emails.push({ tenantId, emailId, before, after, events });
  }
  return { emails, deltas: aggregateDeltas(deltas), dimDeltas: aggregateDimDeltas(dimDeltas) };
}
