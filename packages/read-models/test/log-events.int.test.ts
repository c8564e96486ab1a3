// The log's events that are no email's (SPEC §25: "delivery, inbound, domain, contact and custom
// events") in the event stream, through its owner's statements on a Postgres server and on PGlite:
// a domain check and a received message read as their webhook bodies with a cursor, after the
// tenant's earlier events and in the order given; a batch delivered again adds nothing; an
// erasure nulls a received message's addresses, subject and message id and keeps the rest, and a
// contact's address and data in its own events (rows that hold the event once, as text: 0480).
import type { DomainEvent, InboundEvent } from '@tern/contracts';
import { withTransaction } from '@tern/kernel';
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import {
  appendContactEvents,
  eraseContactEvents,
  eraseInboundEvents,
  listEvents,
  streamLogEvents,
} from '../src/index.js';

const at = '2026-05-01T08:00:00.000Z';
const domainEvent = (tenantId: string, n: number): DomainEvent => ({
  id: `dom_1:verified:${n}`,
  type: 'domain.verified',
  tenantId,
  domainId: 'dom_1',
  occurredAt: at,
  data: { name: 'example.com', status: 'verified', records: [], reason: null, verifiedAt: at },
});
const received = (tenantId: string, n: number): InboundEvent => ({
  id: `inb_${String(n).padStart(26, '0')}:received`,
  type: 'email.received',
  tenantId,
  inboundId: `inb_${String(n).padStart(26, '0')}`,
  occurredAt: at,
  data: {
    from: 'ann@example.net',
    to: ['support@acme.test'],
    subject: 'Help',
    messageId: '<m1@example.net>',
    size: 1200,
    attachments: 0,
    auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', arc: 'none' },
    inReplyTo: null,
  },
});
const list = (pool: Parameters<typeof listEvents>[0], tenantId: string, types?: string[]) =>
  listEvents(pool, { tenantId, limit: 100, cutoff: new Date(0), types }).then((page) => {
    if (page.expired) throw new Error('expired');
    return page.data as unknown as {
      id: string;
      cursor: string;
      type: string;
      data: Record<string, unknown>;
    }[];
  });

onEveryPostgres('domain and inbound events in the event stream', (db) => {
  it('reads them as their webhook bodies, after the earlier events, in the order given', async () => {
    const T = 'stream-log-1';
    await withTransaction(db(), (c) =>
      appendContactEvents(c, T, [
        { id: 'evt_1', contactId: 'ct_1', type: 'signed_up', timestamp: at, data: {} },
      ]),
    );
    await withTransaction(db(), (c) =>
      streamLogEvents(c, [domainEvent(T, 1), received(T, 2), received('other', 3)]),
    );
    const events = await list(db(), T);
    expect(events.map((e) => [e.cursor, e.type])).toEqual([
      ['1', 'signed_up'],
      ['2', 'domain.verified'],
      ['3', 'email.received'],
    ]);
    expect(events[1]?.data).toEqual({ domainId: 'dom_1', tenantId: T, ...domainEvent(T, 1).data });
    expect(events[2]?.data).toMatchObject({
      inboundId: received(T, 2).inboundId,
      from: 'ann@example.net',
      subject: 'Help',
      links: {
        self: `/inbound/${received(T, 2).inboundId}`,
        raw: `/inbound/${received(T, 2).inboundId}/raw`,
      },
    });
    expect((await list(db(), T, ['email.received'])).map((e) => e.cursor)).toEqual(['3']);
    expect((await list(db(), 'other')).map((e) => e.cursor)).toEqual(['1']);
  });

  it('adds nothing for a batch delivered again', async () => {
    const T = 'stream-log-2';
    await withTransaction(db(), (c) => streamLogEvents(c, [received(T, 4)]));
    await withTransaction(db(), (c) => streamLogEvents(c, [received(T, 4), received(T, 5)]));
    const events = await list(db(), T);
    expect(events.map((e) => e.id)).toEqual([received(T, 4).id, received(T, 5).id]);
  });

  it("erases a received message's personal fields, never the others' nor other events", async () => {
    const T = 'stream-log-3';
    await withTransaction(db(), (c) =>
      streamLogEvents(c, [received(T, 6), received(T, 7), domainEvent(T, 2)]),
    );
    const erased = await withTransaction(db(), (c) => eraseInboundEvents(c, T, [received(T, 6).inboundId]));
    expect(erased).toBe(1);
    const [first, second, domain] = await list(db(), T);
    expect(first?.data).toMatchObject({ from: null, to: null, subject: null, messageId: null, size: 1200 });
    expect(first?.cursor).toBe('1');
    expect(JSON.stringify(first)).not.toContain('ann@example.net');
    expect(second?.data).toMatchObject({ from: 'ann@example.net', subject: 'Help' });
    expect(domain?.type).toBe('domain.verified');
    expect(await withTransaction(db(), (c) => eraseInboundEvents(c, T, [received(T, 6).inboundId]))).toBe(0);
  });
  it("erases a contact's address and data in its own events, never another contact's", async () => {
    const T = 'stream-log-5';
    const tracked = (n: number, contactId: string, email: string) => ({
      id: `evt_${n}`,
      contactId,
      type: 'signed_up',
      timestamp: at,
      data: { tenantId: T, contactId, email, data: { plan: 'pro' } },
    });
    await withTransaction(db(), (c) =>
      appendContactEvents(c, T, [
        tracked(1, 'ct_a', 'ann@example.net'),
        tracked(2, 'ct_b', 'bob@example.net'),
      ]),
    );
    expect(await withTransaction(db(), (c) => eraseContactEvents(c, T, ['ct_a']))).toBe(1);
    const [ann, bob] = await list(db(), T);
    expect(ann).toMatchObject({ cursor: '1', type: 'signed_up' });
    expect(ann?.data).toEqual({ tenantId: T, contactId: 'ct_a', email: null, data: null });
    expect(bob?.data).toEqual({
      tenantId: T,
      contactId: 'ct_b',
      email: 'bob@example.net',
      data: { plan: 'pro' },
    });
    expect(await withTransaction(db(), (c) => eraseContactEvents(c, T, ['ct_a']))).toBe(0);
  });

  it('streams a received subject no jsonb can hold (U+0000, a lone surrogate) with U+FFFD, and goes on', async () => {
    const T = 'stream-log-4';
    const odd = received(T, 8);
    odd.data.subject = 'a\u0000b\uD800c';
    await withTransaction(db(), (c) => streamLogEvents(c, [odd, received(T, 9)]));
    const events = await list(db(), T);
    expect(events.map((e) => e.data.subject)).toEqual(['a\uFFFDb\uFFFDc', 'Help']);
  });
});
