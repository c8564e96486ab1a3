import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type EventType, validateEvents } from '../src/index.js';

const envelope = {
  id: 'evt_1',
  tenantId: 'tenant-1',
  emailId: 'email.1',
  occurredAt: '2024-05-01T10:00:00Z',
};

/** One valid sample per event type, with every optional field of its data. */
const samples: Record<EventType, Record<string, unknown>> = {
  'email.queued': {
    type: 'email.queued',
    data: {
      toEmail: 'ada@example.com',
      subject: 'Welcome',
      templateId: 'tpl_welcome',
      tags: ['onboarding', 'de'],
      from: 'Tern <hello@tern.dev>',
      scheduledAt: '2024-05-02T08:00:00.000+02:00',
    },
  },
  'email.sent': { type: 'email.sent', data: { provider: 'ses', messageId: '0100018f-abc' } },
  'email.delayed': { type: 'email.delayed', data: { reason: 'mailbox busy' } },
  'email.delivered': { type: 'email.delivered', data: {} },
  'email.bounced': { type: 'email.bounced', data: { bounceType: 'hard', reason: 'no such user' } },
  'email.failed': { type: 'email.failed', data: { reason: 'provider rejected' } },
  'email.suppressed': { type: 'email.suppressed', data: { reason: 'on suppression list' } },
  'email.cancelled': { type: 'email.cancelled', data: {} },
  'email.opened': { type: 'email.opened', data: { userAgent: 'Mozilla/5.0' } },
  'email.clicked': { type: 'email.clicked', data: { url: 'https://example.com/a?b=c' } },
  'email.complained': { type: 'email.complained', data: { feedbackType: 'abuse' } },
};

const sample = (type: EventType, patch: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...envelope,
  ...samples[type],
  ...patch,
});

/** Issues of a one-event batch, or a failure naming the unexpected success. */
function issuesOf(raw: unknown) {
  const r = validateEvents([raw]);
  if (r.ok) throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
  return r.issues;
}

describe('validateEvents: valid events', () => {
  it.each(EVENT_TYPES)('%s sample parses to the same event', (type) => {
    const raw = sample(type);
    const r = validateEvents([raw]);
    expect(r).toEqual({ ok: true, events: [raw] });
  });

  it.each([
    'email.delivered',
    'email.cancelled',
    'email.opened',
    'email.delayed',
    'email.complained',
  ] as const)('%s without data gets data {}', (type) => {
    const { data: _data, ...raw } = sample(type);
    const r = validateEvents([raw]);
    expect(r.ok && r.events[0]).toEqual({ ...raw, data: {} });
  });

  it('email.queued with only the required data fields parses', () => {
    const raw = sample('email.queued', { data: { toEmail: 'a@b.co', subject: '' } });
    expect(validateEvents([raw]).ok).toBe(true);
  });

  it('accepts timestamps with any offset and fractional seconds', () => {
    for (const occurredAt of [
      '2024-05-01T10:00:00+05:30',
      '2024-05-01T10:00:00.123456-08:00',
      '2024-05-01T10:00:00.1Z',
    ]) {
      expect(validateEvents([sample('email.delivered', { occurredAt })]).ok).toBe(true);
    }
  });

  it('accepts ids at the edges of the id rule', () => {
    const raw = sample('email.delivered', { id: 'a'.repeat(128), tenantId: 'A', emailId: 'x_y.z:1-2' });
    expect(validateEvents([raw]).ok).toBe(true);
  });
});

describe('validateEvents: one precise issue per problem', () => {
  it('unknown type lists the known types', () => {
    expect(issuesOf(sample('email.delivered', { type: 'email.read' }))).toEqual([
      { index: 0, path: 'type', message: `type must be one of ${EVENT_TYPES.join(', ')}` },
    ]);
  });

  it('missing type is required', () => {
    const { type: _type, ...raw } = sample('email.delivered');
    expect(issuesOf(raw)).toEqual([{ index: 0, path: 'type', message: 'type is required' }]);
  });

  it.each([
    'yesterday',
    '2024-05-01',
    '2024-05-01T10:00Z',
    '2024-05-01T10:00:00',
    '2024-02-30T00:00:00Z',
    '2024-05-01T10:00:00+0100',
  ])('bad timestamp %s', (occurredAt) => {
    expect(issuesOf(sample('email.delivered', { occurredAt }))).toEqual([
      { index: 0, path: 'occurredAt', message: 'occurredAt must be an ISO 8601 timestamp' },
    ]);
  });

  it('bad scheduledAt names the data field', () => {
    const raw = sample('email.queued', { data: { toEmail: 'a@b.co', subject: 's', scheduledAt: 'soon' } });
    expect(issuesOf(raw)).toEqual([
      { index: 0, path: 'data.scheduledAt', message: 'scheduledAt must be an ISO 8601 timestamp' },
    ]);
  });

  it.each(['id', 'tenantId', 'emailId', 'occurredAt'])('missing envelope field %s is required', (field) => {
    const raw: Record<string, unknown> = sample('email.delivered');
    delete raw[field];
    expect(issuesOf(raw)).toEqual([{ index: 0, path: field, message: `${field} is required` }]);
  });

  it.each([
    ['email.queued', 'toEmail'],
    ['email.queued', 'subject'],
    ['email.sent', 'provider'],
    ['email.sent', 'messageId'],
    ['email.bounced', 'bounceType'],
    ['email.failed', 'reason'],
    ['email.suppressed', 'reason'],
    ['email.clicked', 'url'],
  ] as const)('%s without data.%s: it is required', (type, field) => {
    const data: Record<string, unknown> = { ...(samples[type].data as Record<string, unknown>) };
    delete data[field];
    expect(issuesOf(sample(type, { data }))).toEqual([
      { index: 0, path: `data.${field}`, message: `${field} is required` },
    ]);
  });

  it.each([
    'email.queued',
    'email.sent',
    'email.bounced',
    'email.failed',
    'email.suppressed',
    'email.clicked',
  ] as const)('%s without data: data is required', (type) => {
    const { data: _data, ...raw } = sample(type);
    expect(issuesOf(raw)).toEqual([{ index: 0, path: 'data', message: 'data is required' }]);
  });

  it('data that is not an object', () => {
    expect(issuesOf(sample('email.delivered', { data: null }))).toEqual([
      { index: 0, path: 'data', message: 'data must be an object' },
    ]);
    expect(issuesOf(sample('email.sent', { data: 'ses' }))).toEqual([
      { index: 0, path: 'data', message: 'data must be an object' },
    ]);
  });

  it.each([null, 'email.sent', 42, []])('an event that is not an object (%j)', (raw) => {
    expect(issuesOf(raw)).toEqual([{ index: 0, path: '', message: 'event must be an object' }]);
  });

  it.each([
    ['tenantId', 'tenant 1'],
    ['tenantId', ''],
    ['emailId', 'e'.repeat(129)],
    ['emailId', 'mail/1'],
    ['id', 'évt'],
  ])('%s %j breaks the id rule', (field, value) => {
    expect(issuesOf(sample('email.delivered', { [field]: value }))).toEqual([
      { index: 0, path: field, message: `${field} must be 1..128 characters of [A-Za-z0-9_.:-]` },
    ]);
  });

  it('an id that is not a string', () => {
    expect(issuesOf(sample('email.delivered', { tenantId: 7 }))).toEqual([
      { index: 0, path: 'tenantId', message: 'tenantId must be a string' },
    ]);
  });

  it('an unknown envelope field points at it', () => {
    expect(issuesOf(sample('email.delivered', { extra: 1 }))).toEqual([
      { index: 0, path: 'extra', message: 'extra is not an allowed field' },
    ]);
  });

  it('each unknown data field gets its own issue', () => {
    const raw = sample('email.sent', { data: { provider: 'ses', messageId: 'm', region: 'eu', cost: 1 } });
    expect(issuesOf(raw)).toEqual([
      { index: 0, path: 'data.region', message: 'region is not an allowed field' },
      { index: 0, path: 'data.cost', message: 'cost is not an allowed field' },
    ]);
  });

  it('a field of the wrong event type is unknown there', () => {
    expect(issuesOf(sample('email.delivered', { data: { url: 'https://x.y' } }))).toEqual([
      { index: 0, path: 'data.url', message: 'url is not an allowed field' },
    ]);
  });

  it('value rules of data fields', () => {
    expect(issuesOf(sample('email.queued', { data: { toEmail: 'not-an-address', subject: 's' } }))).toEqual([
      { index: 0, path: 'data.toEmail', message: 'toEmail must be an email address' },
    ]);
    expect(issuesOf(sample('email.bounced', { data: { bounceType: 'medium' } }))).toEqual([
      { index: 0, path: 'data.bounceType', message: 'bounceType must be hard or soft' },
    ]);
    expect(issuesOf(sample('email.failed', { data: { reason: '' } }))).toEqual([
      { index: 0, path: 'data.reason', message: 'reason must not be empty' },
    ]);
    expect(
      issuesOf(sample('email.queued', { data: { toEmail: 'a@b.co', subject: 's', tags: ['ok', 5] } })),
    ).toEqual([{ index: 0, path: 'data.tags.1', message: 'tag must be a string' }]);
  });

  it('several problems of one event are all listed', () => {
    const raw = { ...sample('email.sent', { tenantId: 'a b', data: { provider: 'ses' } }) };
    delete (raw as Record<string, unknown>).occurredAt;
    expect(issuesOf(raw)).toEqual(
      expect.arrayContaining([
        { index: 0, path: 'tenantId', message: 'tenantId must be 1..128 characters of [A-Za-z0-9_.:-]' },
        { index: 0, path: 'occurredAt', message: 'occurredAt is required' },
        { index: 0, path: 'data.messageId', message: 'messageId is required' },
      ]),
    );
  });
});

describe('validateEvents: batches', () => {
  it('issues carry the index of their event; valid events in the batch produce none', () => {
    const r = validateEvents([
      sample('email.queued'),
      sample('email.sent', { occurredAt: 'now' }),
      sample('email.opened'),
      sample('email.delivered', { type: 'email.nope' }),
      sample('email.delivered', { extra: true }),
    ]);
    expect(r).toEqual({
      ok: false,
      issues: [
        { index: 1, path: 'occurredAt', message: 'occurredAt must be an ISO 8601 timestamp' },
        { index: 3, path: 'type', message: `type must be one of ${EVENT_TYPES.join(', ')}` },
        { index: 4, path: 'extra', message: 'extra is not an allowed field' },
      ],
    });
  });

  it('an all-valid batch returns every event in order', () => {
    const raws = EVENT_TYPES.map((type, i) => sample(type, { id: `evt_${i}` }));
    const r = validateEvents(raws);
    expect(r.ok && r.events.map((e) => e.id)).toEqual(raws.map((e) => e.id));
  });
});

describe('what no store can hold is refused with the field named (issue 9, item 1)', () => {
  const issuesOf = (event: Record<string, unknown>) => {
    const r = validateEvents([event]);
    return r.ok ? [] : r.issues;
  };

  it('refuses U+0000 in any string, naming the field', () => {
    const issues = issuesOf(
      sample('email.queued', { data: { toEmail: 'a@example.com', subject: 'a\u0000b' } }),
    );
    expect(issues).toEqual([
      { index: 0, path: 'data.subject', message: 'subject must not contain the control character U+0000' },
    ]);
    expect(
      issuesOf(
        sample('email.queued', { data: { toEmail: 'a@example.com', subject: 'x', tags: ['ok', '\u0000'] } }),
      )[0]?.path,
    ).toBe('data.tags.1');
  });

  it('refuses a lone surrogate (high or low), accepts a proper pair', () => {
    for (const bad of ['\ud800', 'a\udc00b', 'x\ud83d']) {
      const issues = issuesOf(sample('email.failed', { data: { reason: bad } }));
      expect(issues.map((i) => i.path)).toEqual(['data.reason']);
      expect(issues[0]?.message).toMatch(/lone UTF-16 surrogate/);
    }
    expect(issuesOf(sample('email.failed', { data: { reason: 'ok 😀' } }))).toEqual([]);
  });

  it('refuses occurredAt outside 1970..2149 and more than a day ahead', () => {
    for (const at of [
      '0000-01-01T00:00:00Z',
      '1969-12-31T23:59:59Z',
      '2149-06-06T00:00:00Z',
      '9999-12-31T23:59:59Z',
    ]) {
      const issues = issuesOf(sample('email.delivered', { occurredAt: at }));
      expect(issues, at).toEqual([
        {
          index: 0,
          path: 'occurredAt',
          message: 'occurredAt must be between 1970-01-01 and 2149-06-05 (UTC)',
        },
      ]);
    }
    const ahead = new Date(Date.now() + 25 * 3600_000).toISOString();
    expect(issuesOf(sample('email.delivered', { occurredAt: ahead }))[0]?.message).toBe(
      'occurredAt must not be more than 1 day in the future',
    );
    for (const ok of ['1970-01-01T00:00:00Z', new Date(Date.now() + 23 * 3600_000).toISOString()]) {
      expect(issuesOf(sample('email.delivered', { occurredAt: ok })), ok).toEqual([]);
    }
  });
});

describe('the storable-text walk names every unstorable string by its path (issue 33)', () => {
  const issuesOf = (event: Record<string, unknown>) => {
    const r = validateEvents([event]);
    return r.ok ? [] : r.issues;
  };
  const NUL = 'must not contain the control character U+0000';

  it('an item of an array is named by its index, after storable items and fields', () => {
    expect(
      issuesOf(
        sample('email.queued', {
          data: { toEmail: 'a@example.com', subject: 'ok', tags: ['a', 'b', 'c\u0000'], from: 'x\u0000' },
        }),
      ),
    ).toEqual([
      { index: 0, path: 'data.tags.2', message: `2 ${NUL}` },
      { index: 0, path: 'data.from', message: `from ${NUL}` },
    ]);
  });

  it('walks past null, booleans and nested objects to the strings after them', () => {
    // A null toEmail parses (it is refused later, when the event is whole): the walk reads past it.
    expect(issuesOf(sample('email.queued', { data: { toEmail: null, subject: 'a\u0000' } }))).toEqual([
      { index: 0, path: 'data.subject', message: `subject ${NUL}` },
    ]);
    expect(
      issuesOf(sample('email.opened', { data: { bot: true, machine: false, userAgent: '\ud800' } })),
    ).toEqual([
      {
        index: 0,
        path: 'data.userAgent',
        message: 'userAgent must not contain a lone UTF-16 surrogate (invalid Unicode)',
      },
    ]);
  });

  it('every envelope string is checked, each issue on its own field', () => {
    const issues = issuesOf(
      sample('email.failed', { data: { reason: 'r\u0000' }, id: 'evt_1', tenantId: 'tenant-1' }),
    );
    expect(issues).toEqual([{ index: 0, path: 'data.reason', message: `reason ${NUL}` }]);
    // Two bad strings in one event: two issues, in field order.
    expect(
      issuesOf(
        sample('email.bounced', { data: { bounceType: 'soft', reason: '\u0000', diagnostic: '\u0000' } }),
      ),
    ).toEqual([
      { index: 0, path: 'data.reason', message: `reason ${NUL}` },
      { index: 0, path: 'data.diagnostic', message: `diagnostic ${NUL}` },
    ]);
  });
});
