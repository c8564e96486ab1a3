import { describe, expect, it } from 'vitest';
import { validateEvents } from '../src/validate-events.js';

// validateEvents on what a JavaScript caller can hand it beyond JSON (a field set to `undefined`),
// and the issues of a queued event whose personal fields are null (erased: a consumer's view).

const queued = (data: Record<string, unknown>) => ({
  id: 'evt_1',
  tenantId: 'tenant-1',
  emailId: 'email.1',
  occurredAt: '2024-05-01T10:00:00Z',
  type: 'email.queued',
  data,
});

describe('validateEvents', () => {
  it('refuses a null subject or recipient of a queued event, each with its own message', () => {
    expect(validateEvents([queued({ toEmail: 'a@b.co', subject: null })])).toEqual({
      ok: false,
      issues: [{ index: 0, path: 'data.subject', message: 'subject must be a string' }],
    });
    expect(validateEvents([queued({ toEmail: null, subject: null })])).toEqual({
      ok: false,
      issues: [
        { index: 0, path: 'data.toEmail', message: 'toEmail must be an email address' },
        { index: 0, path: 'data.subject', message: 'subject must be a string' },
      ],
    });
  });

  it('parses a queued event with an optional field set to undefined (not canonical: zod parses it)', () => {
    expect(validateEvents([queued({ toEmail: 'a@b.co', subject: 's', templateId: undefined })])).toEqual({
      ok: true,
      events: [queued({ toEmail: 'a@b.co', subject: 's' })],
    });
  });

  it('calls a required field set to undefined required, like an absent one', () => {
    expect(validateEvents([queued({ toEmail: undefined, subject: 's' })])).toEqual({
      ok: false,
      issues: [{ index: 0, path: 'data.toEmail', message: 'toEmail is required' }],
    });
  });
});
