import { deliveryEventSchema } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import { attemptEvents, cancelledEvent, clickedEvent, openedEvent, queuedEvent } from '../src/index.js';

const at = new Date('2026-03-15T10:00:00.000Z');

describe('event factories', () => {
  it('derive ids from what the event is about: the same fact twice is the same event', () => {
    const input = {
      tenantId: 't',
      emailId: 'em_1',
      at,
      toEmail: 'a@example.com',
      subject: 'Hi',
      tags: ['x'],
    };
    expect(queuedEvent(input)).toEqual(queuedEvent(input));
    expect(queuedEvent(input).id).toBe('em_1:queued');
    expect(cancelledEvent('t', 'em_1', at).id).toBe('em_1:cancelled');
    const first = attemptEvents('t', 'em_1', 2, at);
    const again = attemptEvents('t', 'em_1', 2, at);
    expect(first.sent({ provider: 'p', messageId: 'm' })).toEqual(
      again.sent({ provider: 'p', messageId: 'm' }),
    );
    expect(attemptEvents('t', 'em_1', 3, at).failed({ reason: 'x' }).id).toBe('em_1:a3:failed');
  });

  it('space the outcomes of one attempt by 1 ms, in the order they are built', () => {
    const outcomes = attemptEvents('t', 'em_1', 1, at);
    const events = [outcomes.sent({ provider: 'p', messageId: 'm' }), outcomes.delivered()];
    expect(events.map((e) => e.occurredAt)).toEqual(['2026-03-15T10:00:00.000Z', '2026-03-15T10:00:00.001Z']);
  });

  it('build only events the contract accepts (a provider message is cut to the reason bound)', () => {
    const outcomes = attemptEvents('t', 'em_1', 1, at);
    const built = [
      queuedEvent({
        tenantId: 't',
        emailId: 'em_1',
        at,
        toEmail: 'a@example.com',
        subject: 's'.repeat(2000),
      }),
      outcomes.delayed({ reason: 'r'.repeat(5000) }),
      outcomes.failed({ reason: '' }),
      outcomes.bounced({ bounceType: 'hard', reason: 'no such user' }),
      outcomes.bounced({ bounceType: 'soft', smtpStatus: '4.2.2', diagnostic: 'd'.repeat(5000) }),
      outcomes.suppressed({ reason: 'suppressed' }),
      outcomes.complained(),
      openedEvent({
        tenantId: 't',
        emailId: 'em_1',
        at,
        nonce: 'n1',
        userAgent: 'u'.repeat(3000),
        bot: true,
      }),
      clickedEvent({ tenantId: 't', emailId: 'em_1', at, nonce: 'n2', url: 'https://example.com/' }),
    ];
    for (const e of built)
      expect(deliveryEventSchema.safeParse(e).success, JSON.stringify(e).slice(0, 200)).toBe(true);
  });

  it('refuse to build an email.queued the contract refuses', () => {
    expect(() =>
      queuedEvent({ tenantId: 't', emailId: 'em_1', at, toEmail: 'not an address', subject: 'Hi' }),
    ).toThrow();
  });
});
