import { type EmailCancelled, MAX_SCHEDULE_AHEAD_MS } from '@tern/contracts';
import { cancelledEvent } from './events.js';

/**
 * The decisions of the email commands (issue 41): what a command may do and which events it
 * produces, as pure functions beside the fold that reads those events (emmett's
 * `decide(command, state) → events`). The routes load the state, call these, and turn a refusal
 * into their HTTP answer; nothing here reads a store or a clock.
 */

/** Why a `scheduledAt` is refused (SPEC §11: in the future, at most 30 days ahead), or null. */
export function scheduleProblem(scheduledAt: Date, now: Date): string | null {
  if (scheduledAt.getTime() <= now.getTime()) return 'scheduledAt must be in the future';
  if (scheduledAt.getTime() > now.getTime() + MAX_SCHEDULE_AHEAD_MS)
    return 'scheduledAt must be at most 30 days ahead';
  return null;
}

/**
 * What the send row's compare-and-set of a cancel found (packages/sending `cancelSend`): `cancelled`,
 * the email was waiting (queued or scheduled, not handed) and is now cancelling; `already_cancelled`,
 * a cancel came before; `handed`, too late (or never Tern's to send); `not_found`.
 */
export type CancelClaim = 'cancelled' | 'already_cancelled' | 'handed' | 'not_found';

export type CancelDecision =
  | { kind: 'cancel'; events: [EmailCancelled] }
  | { kind: 'already_cancelled'; events: [] }
  | { kind: 'refused'; reason: 'already_sent' }
  | { kind: 'not_found' };

/**
 * `POST /emails/:id/cancel` (SPEC §11): a waiting email is cancelled by one `email.cancelled`
 * (its id is per email, so the sender's sweep writing it too is one event); a cancelled one again
 * changes nothing; a handed one is refused.
 */
export function decideCancel(
  claim: CancelClaim,
  tenantId: string,
  emailId: string,
  at: Date,
): CancelDecision {
  switch (claim) {
    case 'cancelled':
      return { kind: 'cancel', events: [cancelledEvent(tenantId, emailId, at)] };
    case 'already_cancelled':
      return { kind: 'already_cancelled', events: [] };
    case 'handed':
      return { kind: 'refused', reason: 'already_sent' };
    case 'not_found':
      return { kind: 'not_found' };
  }
}
