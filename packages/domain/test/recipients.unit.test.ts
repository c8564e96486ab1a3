// Several recipients (SPEC §22): the envelope and each recipient's own outcome.
import { type DeliveryEvent, envelopeOf, sendEmailBodySchema } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import { foldEmail, recipientOutcomes } from '../src/index.js';

const ev = (id: string, type: string, ms: number, data: Record<string, unknown> = {}) =>
  ({
    id,
    type,
    tenantId: 't',
    emailId: 'em_1',
    occurredAt: new Date(Date.UTC(2026, 5, 15) + ms).toISOString(),
    data,
  }) as DeliveryEvent;

describe('several recipients', () => {
  it('envelopeOf: to, cc, bcc, each address once (case-insensitive), first spelling kept', () => {
    expect(
      envelopeOf({ to: ['A@x.test', 'b@x.test'], cc: ['a@X.test', 'c@x.test'], bcc: ['B@x.test'] }),
    ).toEqual([
      { address: 'A@x.test', kind: 'to' },
      { address: 'b@x.test', kind: 'to' },
      { address: 'c@x.test', kind: 'cc' },
    ]);
    expect(envelopeOf({ to: 'one@x.test' })).toEqual([{ address: 'one@x.test', kind: 'to' }]);
  });

  it('each recipient folds its own and the message’s events; the email folds all but a named suppression', () => {
    const events = [
      ev('q', 'email.queued', 0, { toEmail: 'a@x.test', subject: 's' }),
      ev('s1', 'email.suppressed', 1, { reason: 'suppressed', recipient: 'c@x.test' }),
      ev('se', 'email.sent', 2, { provider: 'smtp', messageId: '<m>' }),
      ev('d', 'email.delivered', 3, { recipient: 'a@x.test' }),
      ev('b', 'email.bounced', 4, { bounceType: 'hard', recipient: 'B@x.test' }),
    ];
    const envelope = envelopeOf({ to: ['a@x.test', 'b@x.test'], cc: ['c@x.test'], bcc: ['d@x.test'] });
    expect(recipientOutcomes(envelope, events, 'QUEUED')).toEqual([
      { email: 'a@x.test', type: 'to', status: 'DELIVERED' },
      { email: 'b@x.test', type: 'to', status: 'BOUNCED' },
      { email: 'c@x.test', type: 'cc', status: 'SUPPRESSED' },
      { email: 'd@x.test', type: 'bcc', status: 'SENT' },
    ]);
    const state = foldEmail(events);
    expect(state.status).toBe('BOUNCED');
    // A named bounce is not the message's: toEmail is not the one to suppress.
    expect(state.hardBounced).toBe(false);
  });

  it('the body schema: 1..50 addresses in to + cc + bcc; Resend-style tags accepted', () => {
    const base = { from: 'a@acme.test', subject: 's', text: 't' };
    expect(
      sendEmailBodySchema.safeParse({ ...base, to: ['a@x.test'], tags: [{ name: 'k', value: 'v' }] }).success,
    ).toBe(true);
    expect(sendEmailBodySchema.safeParse({ ...base, to: [] }).success).toBe(false);
    const many = Array.from({ length: 25 }, (_, i) => `r${i}@x.test`);
    expect(sendEmailBodySchema.safeParse({ ...base, to: many, cc: many }).success).toBe(true);
    expect(sendEmailBodySchema.safeParse({ ...base, to: many, cc: many, bcc: ['z@x.test'] }).success).toBe(
      false,
    );
  });
});
