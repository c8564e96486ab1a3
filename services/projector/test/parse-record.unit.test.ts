import { describe, expect, it } from 'vitest';
import { parseRecord } from '../src/index.js';

/** The projector's reading of one log record: what it folds, what it leaves, what it dead-letters. */
const record = (value: object | string) => ({
  key: 'k',
  value: typeof value === 'string' ? value : JSON.stringify(value),
  partition: 0,
  offset: '0',
});

const domainEvent = {
  id: 'dom_1:verified:1',
  type: 'domain.verified',
  tenantId: 't',
  domainId: 'dom_1',
  occurredAt: '2026-06-15T12:00:00.000Z',
  data: {
    name: 'example.test',
    status: 'verified',
    records: [],
    reason: null,
    verifiedAt: '2026-06-15T12:00:00.000Z',
  },
};

describe('parseRecord', () => {
  it('folds delivery events', () => {
    const p = parseRecord(
      record({
        id: 'e1',
        type: 'email.delivered',
        tenantId: 't',
        emailId: 'em_1',
        occurredAt: '2026-06-15T12:00:00.000Z',
        data: {},
      }),
    );
    expect(p).toMatchObject({ event: { id: 'e1', type: 'email.delivered' } });
  });

  it('leaves a sending domain’s event (SPEC §20) to the dispatcher: neither folded nor dead-lettered', () => {
    expect(parseRecord(record(domainEvent))).toEqual({ skip: 'domain' });
    expect(parseRecord(record({ ...domainEvent, type: 'domain.failed' }))).toEqual({ skip: 'domain' });
  });

  it('dead-letters a domain event that is not well formed, naming the field', () => {
    const p = parseRecord(record({ ...domainEvent, data: { ...domainEvent.data, status: 'maybe' } }));
    expect(p).toHaveProperty('dead');
    expect((p as { dead: { reason: string } }).dead.reason).toMatch(/^data\.status: /);
  });
});
