import { describe, expect, it } from 'vitest';
import { providerEventId, providerNoticeEvent } from '../src/index.js';

const receivedAt = new Date('2026-03-15T10:00:00.000Z');
const base = {
  provider: 'ses',
  key: 'sns-message-1',
  tenantId: 't',
  emailId: 'em_1',
  type: 'email.delivered' as const,
  data: {},
  occurredAt: '2026-03-15T09:59:58.123Z',
  receivedAt,
};

describe('providerNoticeEvent (SPEC §21)', () => {
  it('gives the same notice the same id, another key another id, and keeps the id scheme', () => {
    const first = providerNoticeEvent(base);
    expect(first).toEqual(providerNoticeEvent({ ...base }));
    expect(first?.id).toBe(providerEventId('ses', 'sns-message-1'));
    expect(first?.id).toMatch(/^ses:[A-Za-z0-9_-]{32}$/);
    expect(providerNoticeEvent({ ...base, key: 'sns-message-2' })?.id).not.toBe(first?.id);
    expect(providerNoticeEvent({ ...base, provider: 'postmark' })?.id).toMatch(/^postmark:/);
  });

  it("takes the provider's time when it is one, else the time received", () => {
    expect(providerNoticeEvent(base)?.occurredAt).toBe('2026-03-15T09:59:58.123Z');
    expect(providerNoticeEvent({ ...base, occurredAt: 'Sun, 15 Mar 2026 09:00:00 GMT' })?.occurredAt).toBe(
      '2026-03-15T09:00:00.000Z',
    );
    expect(providerNoticeEvent({ ...base, occurredAt: 'soon' })?.occurredAt).toBe(receivedAt.toISOString());
    expect(providerNoticeEvent({ ...base, occurredAt: undefined })?.occurredAt).toBe(
      receivedAt.toISOString(),
    );
  });

  it('names the one recipient of several, and refuses what the contract refuses', () => {
    const bounced = providerNoticeEvent({
      ...base,
      type: 'email.bounced',
      data: { bounceType: 'hard', reason: 'no such user' },
      recipient: 'b@example.com',
    });
    expect(bounced?.data).toEqual({ bounceType: 'hard', reason: 'no such user', recipient: 'b@example.com' });
    expect(providerNoticeEvent({ ...base, type: 'email.bounced', data: { bounceType: 'maybe' } })).toBeNull();
    expect(providerNoticeEvent({ ...base, tenantId: '' })).toBeNull();
  });
});
