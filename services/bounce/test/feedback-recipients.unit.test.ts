// DSNs about a message to several recipients (SPEC §22): each entry names its recipient.
import { describe, expect, it } from 'vitest';
import { eventsOf, type FeedbackTarget } from '../src/index.js';
import type { DsnRecipient } from '../src/report.js';

const AT = new Date('2026-06-15T12:00:00.000Z');
const entry = (recipient: string, action: DsnRecipient['action'], status: string | null): DsnRecipient => ({
  recipient,
  originalRecipient: null,
  action,
  status,
  diagnostic: status ? `${status.startsWith('5') ? 550 : 451} ${status} about ${recipient}` : null,
});

describe('eventsOf: one outcome per recipient', () => {
  it('several recipients: each DSN entry of one of them is its own event, naming it; a stranger is dropped', () => {
    const target: FeedbackTarget = {
      tenantId: 't1',
      emailId: 'em_m',
      recipients: ['ada@example.com', 'bob@example.com', 'cy@example.com'],
    };
    const events = eventsOf(
      target,
      {
        kind: 'dsn',
        envelopeId: 'em_m',
        recipients: [
          entry('bob@example.com', 'failed', '5.1.1'),
          entry('cy@example.com', 'delayed', '4.2.2'),
          entry('ada@example.com', 'delivered', null),
          entry('zed@example.com', 'failed', '5.1.1'),
        ],
      },
      'report-1',
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
      ['email.delayed', { reason: 'DSN: 451 4.2.2 about cy@example.com', recipient: 'cy@example.com' }],
      ['email.delivered', { recipient: 'ada@example.com' }],
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
  });

  it('one recipient: the outcome is the message’s (no recipient named), as before arrays', () => {
    const events = eventsOf(
      { tenantId: 't1', emailId: 'em_1', recipients: ['ada@example.com'] },
      { kind: 'dsn', envelopeId: null, recipients: [entry('ada@example.com', 'failed', '5.1.1')] },
      'report-2',
      AT,
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.data).not.toHaveProperty('recipient');
  });
});
