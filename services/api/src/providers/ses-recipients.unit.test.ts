// SES notifications listing several recipients of one message (SPEC §22): one notice each.
import { describe, expect, it } from 'vitest';
import { sesNotices } from './notices.js';

const mail = { messageId: '0100018f-aaaa-bbbb', timestamp: '2026-06-15T12:00:00.000Z' };

describe('sesNotices and several recipients', () => {
  it('a bounce of two recipients is two notices, each naming its recipient with its own diagnostic', () => {
    const notices = sesNotices('sns-1', {
      notificationType: 'Bounce',
      mail,
      bounce: {
        bounceType: 'Permanent',
        bounceSubType: 'General',
        timestamp: '2026-06-15T12:00:01.000Z',
        bouncedRecipients: [
          { emailAddress: 'Bob <Bob@Example.com>', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 bob' },
          { emailAddress: 'cy@example.com', diagnosticCode: 'smtp; 552 5.2.2 cy full' },
        ],
      },
    });
    expect(notices.map((n) => [n.key, n.recipient, n.outcome.data])).toEqual([
      [
        'sns-1:r0',
        'bob@example.com',
        {
          bounceType: 'hard',
          reason: 'Permanent: General',
          smtpStatus: '5.1.1',
          diagnostic: 'smtp; 550 5.1.1 bob',
        },
      ],
      [
        'sns-1:r1',
        'cy@example.com',
        {
          bounceType: 'hard',
          reason: 'Permanent: General',
          smtpStatus: '5.2.2',
          diagnostic: 'smtp; 552 5.2.2 cy full',
        },
      ],
    ]);
  });

  it('one recipient: one notice keyed by the notification alone, naming no recipient (as before)', () => {
    const notices = sesNotices('sns-2', {
      notificationType: 'Complaint',
      mail,
      complaint: {
        complaintFeedbackType: 'abuse',
        complainedRecipients: [{ emailAddress: 'a@example.com' }],
      },
    });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ key: 'sns-2', outcome: { type: 'email.complained' } });
    expect(notices[0]!.recipient).toBeUndefined();
  });
});
