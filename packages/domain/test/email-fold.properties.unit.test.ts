import { type DeliveryEvent, STATUS_RANK } from '@tern/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AnalyticsDelta,
  aggregateDeltas,
  bounceCategory,
  classifyUserAgent,
  contribution,
  diffContributions,
  type EmailState,
  evolve,
  foldEmail,
  initialEmailState,
  queuedStatus,
  toLogEntry,
} from '../src/index.js';
import { distinctEventsArb, permutationArb } from './arbitraries.js';

const oneEmail = distinctEventsArb(['t1'], ['e1'], 14);

const foldDistinct = (events: readonly DeliveryEvent[]) =>
  events.reduce<EmailState>((s, e) => evolve(s, e), initialEmailState('t1', 'e1'));

describe('the fold is order- and duplicate-independent (SPEC §5)', () => {
  it('any permutation of an email’s events, with any duplicates, gives the same foldEmail result', () => {
    const arb = oneEmail.chain((events) =>
      fc
        .array(fc.nat(events.length - 1), { maxLength: 6 })
        .chain((dups) =>
          fc.tuple(fc.constant(events), permutationArb([...events, ...dups.map((i) => events[i]!)])),
        ),
    );
    fc.assert(
      fc.property(arb, ([events, delivered]) => {
        expect(foldEmail(delivered)).toStrictEqual(foldEmail(events));
      }),
      { numRuns: 300 },
    );
  });

  it('evolve over distinct events in any order gives the same state', () => {
    const arb = oneEmail.chain((events) => fc.tuple(fc.constant(events), permutationArb(events)));
    fc.assert(
      fc.property(arb, ([events, shuffled]) => {
        expect(foldDistinct(shuffled)).toStrictEqual(foldDistinct(events));
      }),
      { numRuns: 300 },
    );
  });

  it('evolve commutes for any two events from any reachable state', () => {
    const arb = distinctEventsArb(['t1'], ['e1'], 14, 2).chain((events) =>
      fc.tuple(permutationArb(events), fc.nat(events.length - 2)),
    );
    fc.assert(
      fc.property(arb, ([events, cut]) => {
        const [a, b] = [events[cut]!, events[cut + 1]!];
        // JSON round trip in between, as the projector keeps the state in jsonb between batches.
        const state = JSON.parse(JSON.stringify(foldDistinct(events.slice(0, cut)))) as EmailState;
        expect(evolve(evolve(state, a), b)).toStrictEqual(evolve(evolve(state, b), a));
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with a declarative reading of the rules (the whole set at once)', () => {
    fc.assert(
      fc.property(oneEmail, (events) => {
        expect(foldEmail(events)).toStrictEqual(reference(events));
      }),
      { numRuns: 300 },
    );
  });

  it('an email has a log entry iff an email.queued is known, and then a status', () => {
    fc.assert(
      fc.property(oneEmail, (events) => {
        const entry = toLogEntry(foldEmail(events));
        const isQueued = events.some((e) => e.type === 'email.queued');
        expect(entry !== null).toBe(isQueued);
        if (entry) expect(entry.status).toBe(foldEmail(events).status);
      }),
    );
  });
});

describe('analytics deltas telescope to the final contributions', () => {
  const tenants = ['t1', 't2'];
  const emails = ['e1', 'e2', 'e3'];
  const key = (r: { tenantId: string; day: string; templateId: string; projectId: string }) =>
    JSON.stringify([r.tenantId, r.day, r.templateId, r.projectId]);
  const sorted = (rows: AnalyticsDelta[]) => [...rows].sort((x, y) => (key(x) < key(y) ? -1 : 1));

  /** What the rollup should hold: Σ contribution(final state) over every email. */
  function expectedRollup(events: readonly DeliveryEvent[]): AnalyticsDelta[] {
    const byEmail = new Map<string, DeliveryEvent[]>();
    for (const e of events)
      byEmail.set(`${e.tenantId}/${e.emailId}`, [...(byEmail.get(`${e.tenantId}/${e.emailId}`) ?? []), e]);
    const rows: AnalyticsDelta[] = [];
    for (const list of byEmail.values()) {
      const state = foldEmail(list);
      const c = contribution(state);
      if (c) rows.push({ tenantId: state.tenantId, ...c });
    }
    return sorted(aggregateDeltas(rows));
  }

  /**
   * Replays the projector: batches in log order, per batch the touched emails' states before
   * (null when new) and after, their diffs aggregated into one outbox row set.
   */
  function projectedRollup(order: readonly DeliveryEvent[], batchSizes: readonly number[]): AnalyticsDelta[] {
    const states = new Map<string, EmailState>();
    const shipped: AnalyticsDelta[] = [];
    let at = 0;
    let b = 0;
    while (at < order.length) {
      const size = Math.max(1, batchSizes[b++ % Math.max(1, batchSizes.length)] ?? 1);
      const batch = order.slice(at, at + size);
      at += size;
      const before = new Map<string, EmailState | null>();
      for (const e of batch) {
        const k = `${e.tenantId}/${e.emailId}`;
        if (!before.has(k)) before.set(k, states.get(k) ?? null);
        states.set(k, evolve(states.get(k) ?? initialEmailState(e.tenantId, e.emailId), e));
      }
      const outbox = aggregateDeltas(
        [...before].flatMap(([k, old]) => diffContributions(old, states.get(k)!)),
      );
      shipped.push(...outbox);
    }
    return sorted(aggregateDeltas(shipped));
  }

  it('Σ diffContributions along any application order, in any batching, = Σ contribution(final state)', () => {
    const arb = distinctEventsArb(tenants, emails, 30).chain((events) =>
      fc.tuple(
        fc.constant(events),
        permutationArb(events),
        fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 10 }),
      ),
    );
    fc.assert(
      fc.property(arb, ([events, order, batchSizes]) => {
        const expected = expectedRollup(events);
        expect(projectedRollup(order, [1])).toStrictEqual(expected);
        expect(projectedRollup(order, batchSizes)).toStrictEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('each single diff has at most 2 rows, none all-zero, and total moves by at most 1 per row', () => {
    const arb = oneEmail.chain((events) => permutationArb(events));
    fc.assert(
      fc.property(arb, (order) => {
        let state = initialEmailState('t1', 'e1');
        for (const e of order) {
          const next = evolve(state, e);
          const rows = diffContributions(state, next);
          expect(rows.length).toBeLessThanOrEqual(2);
          for (const r of rows) {
            expect(Object.values(r.counters).some((v) => v !== 0)).toBe(true);
            expect(Math.abs(r.counters.total)).toBeLessThanOrEqual(1);
          }
          state = next;
        }
      }),
    );
  });
});

/**
 * The rules of SPEC §5 and docs/architecture.md read over the whole set of events at once, with
 * no notion of arrival order: an oracle for the incremental fold.
 */
function reference(events: readonly DeliveryEvent[]): EmailState {
  const ms = (iso: string) => Date.parse(iso);
  const iso = (iso: string) => new Date(ms(iso)).toISOString();
  const later = (a: DeliveryEvent, b: DeliveryEvent) =>
    ms(a.occurredAt) !== ms(b.occurredAt) ? ms(a.occurredAt) > ms(b.occurredAt) : a.id > b.id;
  const latest = <E extends DeliveryEvent>(list: E[]) =>
    list.reduce<E | undefined>((w, e) => (w === undefined || later(e, w) ? e : w), undefined);
  const earliest = <E extends DeliveryEvent>(list: E[]) =>
    list.reduce<E | undefined>((w, e) => (w === undefined || later(w, e) ? e : w), undefined);
  const ofType = <T extends DeliveryEvent['type']>(t: T) =>
    events.filter((e): e is Extract<DeliveryEvent, { type: T }> => e.type === t);

  const first = events[0]!;
  const state = initialEmailState(first.tenantId, first.emailId);

  const q = earliest(ofType('email.queued'));
  if (q) {
    state.queued = {
      createdAt: iso(q.occurredAt),
      toEmail: q.data.toEmail,
      subject: q.data.subject,
      templateId: q.data.templateId ?? null,
      tags: q.data.tags ?? [],
      from: q.data.from ?? null,
      scheduledAt: q.data.scheduledAt ? iso(q.data.scheduledAt) : null,
      projectId: q.data.projectId ?? null,
      queuedEventId: q.id,
    };
  }

  const statusOf: Partial<Record<DeliveryEvent['type'], keyof typeof STATUS_RANK>> = {
    'email.sent': 'SENT',
    'email.delayed': 'DELAYED',
    'email.delivered': 'DELIVERED',
    'email.bounced': 'BOUNCED',
    'email.failed': 'FAILED',
    'email.suppressed': 'SUPPRESSED',
    'email.cancelled': 'CANCELLED',
  };
  const statusEvents = events.filter((e) => statusOf[e.type] !== undefined);
  const topRank = Math.max(-1, ...statusEvents.map((e) => STATUS_RANK[statusOf[e.type]!]));
  const winner = latest(statusEvents.filter((e) => STATUS_RANK[statusOf[e.type]!] === topRank));
  if (winner) {
    state.status = statusOf[winner.type]!;
    state.statusAt = iso(winner.occurredAt);
    state.statusEventId = winner.id;
  } else if (q && state.queued) {
    state.status = queuedStatus(state.queued);
    state.statusAt = iso(q.occurredAt);
    state.statusEventId = q.id;
  }

  const s = latest(ofType('email.sent'));
  if (s) {
    state.provider = s.data.provider;
    state.messageId = s.data.messageId;
    state.sentAt = iso(s.occurredAt);
    state.sentEventId = s.id;
  }

  const opens = ofType('email.opened').map((e) => ms(e.occurredAt));
  state.openCount = opens.length;
  state.firstOpenedAt = opens.length ? new Date(Math.min(...opens)).toISOString() : null;
  state.lastOpenedAt = opens.length ? new Date(Math.max(...opens)).toISOString() : null;
  state.clickCount = ofType('email.clicked').length;
  state.complaintCount = ofType('email.complained').length;
  state.hardBounced = ofType('email.bounced').some((e) => e.data.bounceType === 'hard');
  // SPEC §26 dimensions: the first human open or click's client, the latest bounce's category.
  const human = earliest([...ofType('email.opened'), ...ofType('email.clicked')]);
  const bounce = latest(ofType('email.bounced'));
  const delayed = ofType('email.delayed').length > 0;
  if (human || bounce || delayed)
    state.dims = {
      ...(human
        ? {
            ...classifyUserAgent(human.data.userAgent),
            engagedAt: iso(human.occurredAt),
            engagedId: human.id,
          }
        : {}),
      ...(bounce
        ? {
            bounce: bounceCategory(bounce.data.smtpStatus, bounce.data.diagnostic),
            bounceAt: iso(bounce.occurredAt),
            bounceId: bounce.id,
          }
        : {}),
      ...(delayed ? { delayed: true } : {}),
    };
  return state;
}
