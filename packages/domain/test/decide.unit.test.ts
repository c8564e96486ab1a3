import { MAX_SCHEDULE_AHEAD_MS } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import { decideCancel, foldEmail, scheduleProblem } from '../src/index.js';

const now = new Date('2026-03-15T10:00:00.000Z');
const plus = (ms: number) => new Date(now.getTime() + ms);

describe('scheduleProblem (SPEC §11)', () => {
  it('accepts a time in the future up to 30 days ahead, to the millisecond', () => {
    expect(scheduleProblem(plus(1), now)).toBeNull();
    expect(scheduleProblem(plus(MAX_SCHEDULE_AHEAD_MS), now)).toBeNull();
  });

  it('refuses now, the past, and a millisecond past 30 days', () => {
    expect(scheduleProblem(now, now)).toBe('scheduledAt must be in the future');
    expect(scheduleProblem(plus(-60_000), now)).toBe('scheduledAt must be in the future');
    expect(scheduleProblem(plus(MAX_SCHEDULE_AHEAD_MS + 1), now)).toBe(
      'scheduledAt must be at most 30 days ahead',
    );
  });
});

describe('decideCancel (SPEC §11)', () => {
  it('cancels a waiting email with one email.cancelled, which the fold reads as CANCELLED', () => {
    const decision = decideCancel('cancelled', 't', 'em_1', now);
    expect(decision.kind).toBe('cancel');
    if (decision.kind !== 'cancel') return;
    expect(decision.events).toEqual([
      {
        id: 'em_1:cancelled',
        type: 'email.cancelled',
        tenantId: 't',
        emailId: 'em_1',
        occurredAt: now.toISOString(),
        data: {},
      },
    ]);
    // The same cancel decided twice (a retried request, the sender's sweep) is the same event.
    expect(decideCancel('cancelled', 't', 'em_1', plus(5))).toMatchObject({
      events: [{ id: 'em_1:cancelled' }],
    });
    expect(foldEmail(decision.events).status).toBe('CANCELLED');
  });

  it('changes nothing for a cancelled email, refuses a handed one, and finds no other', () => {
    expect(decideCancel('already_cancelled', 't', 'em_1', now)).toEqual({
      kind: 'already_cancelled',
      events: [],
    });
    expect(decideCancel('handed', 't', 'em_1', now)).toEqual({ kind: 'refused', reason: 'already_sent' });
    expect(decideCancel('not_found', 't', 'em_1', now)).toEqual({ kind: 'not_found' });
  });
});
