import { type DeliveryEvent, emailLogEntrySchema } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import { type EmailState, evolve, foldEmail, initialEmailState, toLogEntry } from '../src/index.js';
import {
  bounced,
  cancelled,
  clicked,
  complained,
  delayed,
  delivered,
  EMAIL,
  event,
  failed,
  opened,
  queued,
  sent,
  suppressed,
  TENANT,
} from './events.js';

/** Given these events (in this order), the fold yields… */
const given = (...events: DeliveryEvent[]) => ({
  thenState: (expected: Partial<EmailState>) => expect(foldEmail(events)).toMatchObject(expected),
  thenEntry: (expected: ReturnType<typeof toLogEntry>) =>
    expect(toLogEntry(foldEmail(events))).toEqual(expected),
  /** Same expectation in this order and in reverse order. */
  thenStatusEitherOrder: (status: EmailState['status']) => {
    expect(foldEmail(events).status).toBe(status);
    expect(foldEmail([...events].reverse()).status).toBe(status);
  },
});

const T0 = '2024-05-01T10:00:00.000Z';
const T1 = '2024-05-01T10:01:00.000Z';
const T2 = '2024-05-01T10:02:00.000Z';

describe('email.queued creates the log entry', () => {
  it('with createdAt = occurredAt, status QUEUED, no provider yet, tags [] by default', () => {
    given(queued('q1', T0)).thenEntry({
      id: EMAIL,
      toEmail: 'ada@example.com',
      subject: 'Hello',
      status: 'QUEUED',
      provider: null,
      messageId: null,
      createdAt: T0,
      tags: [],
      opened: false,
      clicked: false,
      complained: false,
    });
  });

  it('keeps every field of the queued data in the state', () => {
    given(
      queued('q1', T0, {
        templateId: 'tpl_1',
        tags: ['a', 'b'],
        from: 'x@tern.dev',
        scheduledAt: T0,
        projectId: 'prj_1',
      }),
    ).thenState({
      tenantId: TENANT,
      emailId: EMAIL,
      queued: {
        createdAt: T0,
        toEmail: 'ada@example.com',
        subject: 'Hello',
        templateId: 'tpl_1',
        tags: ['a', 'b'],
        from: 'x@tern.dev',
        scheduledAt: T0,
        projectId: 'prj_1',
        queuedEventId: 'q1',
      },
      status: 'QUEUED',
      statusAt: T0,
      statusEventId: 'q1',
    });
  });

  it('normalises timestamps to UTC ISO with milliseconds', () => {
    given(
      queued('q1', '2024-05-01T12:00:00+02:00', { scheduledAt: '2024-05-01T12:30:00.5-01:00' }),
    ).thenState({
      queued: expect.objectContaining({ createdAt: T0, scheduledAt: '2024-05-01T13:30:00.500Z' }),
      statusAt: T0,
    });
  });

  it('an email that was never queued has no log entry', () => {
    given(sent('s1', T1), delivered('d1', T2), opened('o1', T2)).thenEntry(null);
  });
});

describe('SCHEDULED', () => {
  it('scheduledAt after the queued event’s own occurredAt → SCHEDULED', () => {
    given(queued('q1', T0, { scheduledAt: T1 })).thenState({ status: 'SCHEDULED' });
  });

  it('scheduledAt equal to or before occurredAt → QUEUED', () => {
    given(queued('q1', T1, { scheduledAt: T1 })).thenState({ status: 'QUEUED' });
    given(queued('q1', T1, { scheduledAt: T0 })).thenState({ status: 'QUEUED' });
  });

  it('compares instants, not strings: 10:30+02:00 is before 10:00Z', () => {
    given(queued('q1', T0, { scheduledAt: '2024-05-01T10:30:00+02:00' })).thenState({ status: 'QUEUED' });
    given(queued('q1', '2024-05-01T12:00:00+02:00', { scheduledAt: '2024-05-01T10:00:01Z' })).thenState({
      status: 'SCHEDULED',
    });
  });

  it('a scheduled email that was sent is SENT', () => {
    given(queued('q1', T0, { scheduledAt: T2 }), sent('s1', T2)).thenStatusEitherOrder('SENT');
  });
});

describe('status events set their status', () => {
  it.each([
    [sent, 'SENT'],
    [delayed, 'DELAYED'],
    [delivered, 'DELIVERED'],
    [bounced, 'BOUNCED'],
    [failed, 'FAILED'],
    [suppressed, 'SUPPRESSED'],
    [cancelled, 'CANCELLED'],
  ] as const)('%o → %s', (make, status) => {
    given(queued('q1', T0), make('x1', T1)).thenStatusEitherOrder(status);
  });

  it('opened, clicked and complained do not change the status', () => {
    given(
      queued('q1', T0),
      sent('s1', T1),
      opened('o1', T2),
      clicked('c1', T2),
      complained('k1', T2),
    ).thenState({
      status: 'SENT',
    });
  });
});

describe('status fold: highest rank wins, in any order', () => {
  it('DELIVERED (3) beats a later SENT (1) and DELAYED (2)', () => {
    given(queued('q1', T0), delivered('d1', T0), sent('s1', T1), delayed('w1', T2)).thenStatusEitherOrder(
      'DELIVERED',
    );
  });

  it('BOUNCED (4) beats an earlier or later DELIVERED (3)', () => {
    given(queued('q1', T0), bounced('b1', T1), delivered('d1', T2)).thenStatusEitherOrder('BOUNCED');
  });

  it('equal rank → the later occurredAt wins', () => {
    given(queued('q1', T0), failed('f1', T2), bounced('b1', T1)).thenStatusEitherOrder('FAILED');
    given(queued('q1', T0), cancelled('c1', T1), suppressed('s1', T2)).thenStatusEitherOrder('SUPPRESSED');
  });

  it('equal rank and occurredAt → the greater event id wins', () => {
    given(queued('q1', T0), bounced('evt-a', T1), failed('evt-b', T1)).thenStatusEitherOrder('FAILED');
    given(queued('q1', T0), bounced('evt-b', T1), failed('evt-a', T1)).thenStatusEitherOrder('BOUNCED');
  });

  it('"later" is by instant whatever the offset: 11:30+02:00 is before 10:00Z', () => {
    given(
      queued('q1', T0),
      failed('f1', '2024-05-01T11:30:00+02:00'),
      bounced('b1', T0),
    ).thenStatusEitherOrder('BOUNCED');
  });

  it('equal instants in different offsets tie, so the id decides', () => {
    given(queued('q1', T0), failed('z', '2024-05-01T12:01:00+02:00'), bounced('a', T1)).thenStatusEitherOrder(
      'FAILED',
    );
  });

  it('keeps the winner’s instant and id for the tie rule', () => {
    given(queued('q1', T0), failed('f1', '2024-05-01T12:01:00+02:00')).thenState({
      status: 'FAILED',
      statusAt: T1,
      statusEventId: 'f1',
    });
  });
});

describe('events before email.queued are kept and applied', () => {
  it('only non-status events: no status, no entry', () => {
    given(opened('o1', T1), clicked('c1', T1)).thenState({
      queued: null,
      status: null,
      openCount: 1,
      clickCount: 1,
    });
  });

  it('delivered before queued → DELIVERED once queued arrives', () => {
    given(delivered('d1', T2), queued('q1', T0)).thenEntry(
      expect.objectContaining({ status: 'DELIVERED', createdAt: T0 }),
    );
  });

  it('a status event before the queued one with an earlier occurredAt still outranks QUEUED', () => {
    given(sent('s1', T0), queued('q1', T2, { scheduledAt: '2024-05-02T00:00:00Z' })).thenStatusEitherOrder(
      'SENT',
    );
  });

  it('opens before queued show up in the entry’s counts', () => {
    given(opened('o1', T2), queued('q1', T0)).thenState({ openCount: 1, firstOpenedAt: T2 });
    given(opened('o1', T2), queued('q1', T0)).thenEntry(
      expect.objectContaining({ opened: true, clicked: false, complained: false }),
    );
  });
});

describe('several email.queued', () => {
  it('the earliest occurredAt defines createdAt and the fields, whatever the arrival order', () => {
    const early = queued('q-late-id', T0, { subject: 'first', templateId: 'tpl_a', tags: ['x'] });
    const late = queued('q-early-id', T1, { subject: 'second', templateId: 'tpl_b' });
    const expected = expect.objectContaining({ subject: 'first', createdAt: T0, tags: ['x'] });
    given(early, late).thenEntry(expected);
    given(late, early).thenEntry(expected);
    given(late, early).thenState({
      queued: expect.objectContaining({ templateId: 'tpl_a', queuedEventId: 'q-late-id' }),
    });
  });

  it('equal occurredAt → the smallest id defines the email', () => {
    const a = queued('q-a', T0, { subject: 'A' });
    const b = queued('q-b', T0, { subject: 'B' });
    given(a, b).thenEntry(expect.objectContaining({ subject: 'A' }));
    given(b, a).thenEntry(expect.objectContaining({ subject: 'A' }));
  });

  it('the defining email.queued also defines QUEUED vs SCHEDULED', () => {
    const scheduledLater = queued('q2', T1, { scheduledAt: T2 });
    const plainEarlier = queued('q1', T0);
    given(scheduledLater, plainEarlier).thenState({ status: 'QUEUED', statusAt: T0, statusEventId: 'q1' });
    given(plainEarlier, scheduledLater).thenState({ status: 'QUEUED', statusAt: T0, statusEventId: 'q1' });
  });

  it('a new defining email.queued leaves a higher status alone', () => {
    given(queued('q2', T1), delivered('d1', T2), queued('q1', T0)).thenState({
      status: 'DELIVERED',
      queued: expect.objectContaining({ queuedEventId: 'q1' }),
    });
  });
});

describe('several email.sent', () => {
  it('provider and messageId come from the latest occurredAt, in any order', () => {
    const first = sent('s1', T1, 'ses', 'm-1');
    const retry = sent('s2', T2, 'postmark', 'm-2');
    const expected = expect.objectContaining({ status: 'SENT', provider: 'postmark', messageId: 'm-2' });
    given(queued('q1', T0), first, retry).thenEntry(expected);
    given(queued('q1', T0), retry, first).thenEntry(expected);
  });

  it('equal occurredAt → the greater id', () => {
    const a = sent('s-a', T1, 'ses', 'm-a');
    const b = sent('s-b', T1, 'postmark', 'm-b');
    given(queued('q1', T0), a, b).thenState({
      provider: 'postmark',
      messageId: 'm-b',
      sentAt: T1,
      sentEventId: 's-b',
    });
    given(queued('q1', T0), b, a).thenState({
      provider: 'postmark',
      messageId: 'm-b',
      sentAt: T1,
      sentEventId: 's-b',
    });
  });

  it('provider and messageId stay after a higher status', () => {
    given(queued('q1', T0), sent('s1', T1, 'ses', 'm-1'), delivered('d1', T2)).thenEntry(
      expect.objectContaining({ status: 'DELIVERED', provider: 'ses', messageId: 'm-1' }),
    );
  });
});

describe('engagement', () => {
  it('opens: count, first and last open time (by instant)', () => {
    given(
      queued('q1', T0),
      opened('o2', T2),
      opened('o1', '2024-05-01T12:01:00+02:00'),
      opened('o3', '2024-05-01T10:01:30Z'),
    ).thenState({ openCount: 3, firstOpenedAt: T1, lastOpenedAt: T2 });
  });

  it('clicks and complaints are counted', () => {
    given(queued('q1', T0), clicked('c1', T1), clicked('c2', T1), complained('k1', T2)).thenState({
      clickCount: 2,
      complaintCount: 1,
    });
  });
});

describe('foldEmail and evolve', () => {
  it('the same event id twice counts once', () => {
    const open = opened('o1', T1);
    given(queued('q1', T0), open, open, clicked('c1', T1), clicked('c1', T1)).thenState({
      openCount: 1,
      clickCount: 1,
    });
  });

  it('evolve never mutates the state it is given', () => {
    const deepFreeze = <T>(v: T): T => {
      if (v !== null && typeof v === 'object') {
        for (const x of Object.values(v)) deepFreeze(x);
        Object.freeze(v);
      }
      return v;
    };
    let state = deepFreeze(initialEmailState(TENANT, EMAIL));
    for (const e of [
      queued('q1', T0, { tags: ['a'] }),
      sent('s1', T1),
      opened('o1', T1),
      delivered('d1', T2),
    ]) {
      const before = structuredClone(state);
      const next = evolve(state, e);
      expect(state).toEqual(before);
      state = deepFreeze(next);
    }
    expect(state.status).toBe('DELIVERED');
  });

  it('rejects an event of another email or tenant', () => {
    const state = initialEmailState(TENANT, EMAIL);
    expect(() => evolve(state, delivered('d1', T0, { emailId: 'email-2' }))).toThrow(/tenant-1\/email-1/);
    expect(() => evolve(state, delivered('d1', T0, { tenantId: 'tenant-2' }))).toThrow(/not for tenant-1/);
  });

  it('foldEmail needs an event to know which email it folds', () => {
    expect(() => foldEmail([])).toThrow(RangeError);
  });

  it('the state survives a JSON round trip (jsonb) and folds on from there', () => {
    const events = [queued('q1', T0, { tags: ['a'] }), sent('s1', T1), opened('o1', T1)];
    const state = foldEmail(events);
    const restored = JSON.parse(JSON.stringify(state)) as EmailState;
    expect(restored).toStrictEqual(state);
    expect(evolve(restored, delivered('d1', T2))).toStrictEqual(evolve(state, delivered('d1', T2)));
  });

  it('the log entry matches the HTTP contract and is a copy', () => {
    const state = foldEmail([queued('q1', T0, { tags: ['a'] }), sent('s1', T1, 'ses', 'm-1')]);
    const entry = toLogEntry(state);
    expect(emailLogEntrySchema.strict().parse(entry)).toEqual(entry);
    entry?.tags.push('mutated');
    expect(state.queued?.tags).toEqual(['a']);
  });
});

describe('bot opens and clicks (SPEC §11)', () => {
  it('stay out of the counts', () => {
    const q = {
      id: 'q',
      type: 'email.queued' as const,
      tenantId: 't',
      emailId: 'e',
      occurredAt: '2026-01-01T00:00:00Z',
      data: { toEmail: 'a@example.com', subject: 's' },
    };
    const at = '2026-01-01T01:00:00Z';
    const state = foldEmail([
      q,
      { id: 'o1', type: 'email.opened', tenantId: 't', emailId: 'e', occurredAt: at, data: { bot: true } },
      {
        id: 'o2',
        type: 'email.opened',
        tenantId: 't',
        emailId: 'e',
        occurredAt: at,
        data: { userAgent: 'Mail' },
      },
      {
        id: 'c1',
        type: 'email.clicked',
        tenantId: 't',
        emailId: 'e',
        occurredAt: at,
        data: { url: 'https://x.example', bot: true },
      },
    ]);
    expect(state.openCount).toBe(1);
    expect(state.clickCount).toBe(0);
  });
});

describe('hard bounces (the suppression list, SPEC §13)', () => {
  const soft = (id: string, at: string) => event('email.bounced', id, at, { bounceType: 'soft' });

  it('a hard bounce is remembered whatever status wins', () => {
    given(queued('q1', T0), bounced('b1', T1)).thenState({ hardBounced: true });
    given(queued('q1', T0), bounced('b1', T1), failed('f1', T2)).thenState({
      status: 'FAILED',
      hardBounced: true,
    });
  });

  it('a soft bounce alone is not a hard bounce', () => {
    given(queued('q1', T0), soft('b1', T1)).thenState({ status: 'BOUNCED', hardBounced: false });
  });

  it('a state stored before the field existed folds on', () => {
    const old = JSON.parse(JSON.stringify(foldEmail([queued('q1', T0)]))) as Partial<EmailState>;
    delete old.hardBounced;
    expect(evolve(old as EmailState, bounced('b1', T1)).hardBounced).toBe(true);
  });
});
