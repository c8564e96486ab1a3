// DSNs about a message to several recipients (SPEC §22): each entry names its recipient.
import { describe, expect, it } from 'vitest';
import { eventsOf } from '../src/index.js';
import type { DsnRecipient } from '../src/report.js';

const AT = new Date('2026-06-15T12:00:00.000Z');
const entry = (recipient: string, action: DsnRecipient['action'], status: string | null): DsnRecipient => ({
  recipient,
  originalRecipient: null,
  action,
  status,
  diagnostic: status ? `${status.startsWith('5') ? 550 : 451} ${status} about ${recipient}` : null,
});

describe('eventsOf: only the recipient the VERP address proves (issue 40, item 2)', () => {
  const report = {
    kind: 'dsn' as const,
    envelopeId: 'em_m',
    recipients: [
      entry('bob@example.com', 'failed', '5.1.1'),
      entry('cy@example.com', 'delayed', '4.2.2'),
      entry('ada@example.com', 'delivered', null),
      entry('zed@example.com', 'failed', '5.1.1'),
    ],
  };
  const recipients = ['ada@example.com', 'bob@example.com', 'cy@example.com'];

  it('several recipients, the whole-email address (proves none): nothing is applied', () => {
    expect(eventsOf({ tenantId: 't1', emailId: 'em_m', recipients, proven: null }, report, 'r', AT)).toEqual(
      [],
    );
  });

  it('several recipients, the address of bob’s copy: only bob’s entry, naming him', () => {
    const events = eventsOf(
      { tenantId: 't1', emailId: 'em_m', recipients, proven: 'bob@example.com' },
      report,
      'r',
      AT,
    );
    expect(events.map((e) => [e.type, e.data])).toEqual([
      [
        'email.bounced',
        {
          bounceType: 'hard',
          reason: 'DSN: 550 5.1.1 about bob@example.com',
          smtpStatus: '5.1.1',
          diagnostic: '550 5.1.1 about bob@example.com',
          recipient: 'bob@example.com',
        },
      ],
    ]);
  });

  it('a complaint applies to the proven recipient only when it names that one or none', () => {
    const arf = (originalRcptTo: string | null) =>
      ({ kind: 'arf', feedbackType: 'abuse', originalMailFrom: null, originalRcptTo }) as const;
    const bob = { tenantId: 't1', emailId: 'em_m', recipients, proven: 'bob@example.com' };
    expect(eventsOf(bob, arf('ada@example.com'), 'c', AT)).toEqual([]);
    expect(eventsOf(bob, arf('bob@example.com'), 'c', AT).map((e) => e.data)).toEqual([
      { feedbackType: 'abuse', recipient: 'bob@example.com' },
    ]);
    expect(eventsOf({ ...bob, proven: null }, arf('ada@example.com'), 'c', AT)).toEqual([]);
  });
});

describe('eventsOf: one outcome per recipient', () => {
  it('one recipient: the outcome is the message’s (no recipient named), as before arrays', () => {
    const events = eventsOf(
      { tenantId: 't1', emailId: 'em_1', recipients: ['ada@example.com'], proven: 'ada@example.com' },
      { kind: 'dsn', envelopeId: null, recipients: [entry('ada@example.com', 'failed', '5.1.1')] },
      'report-2',
      AT,
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.data).not.toHaveProperty('recipient');
  });
});
