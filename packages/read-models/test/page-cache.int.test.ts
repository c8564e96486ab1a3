// The event stream's page cache (SPEC §25, `page-cache.ts`) on a Postgres server and on PGlite: a
// page read again is the same bytes from memory; a full page stays while events are appended, a
// page not full is read again; an erasure, retention and the cut-off passing the page's events each
// make it read again (never the clear value, never an event past retention); other tenants' writes
// leave it; the bytes are bounded; newest-first pages and a cache of 0 bytes keep nothing.
import type { InboundEvent } from '@tern/contracts';
import { withTransaction } from '@tern/kernel';
import type pg from 'pg';
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import {
  appendContactEvents,
  createEventPageCache,
  type EventsPage,
  eraseContactEvents,
  eraseInboundEvents,
  expireEventStream,
  streamLogEvents,
} from '../src/index.js';

const received = (tenantId: string, n: number): InboundEvent => ({
  id: `inb_${String(n).padStart(26, '0')}:received`,
  type: 'email.received',
  tenantId,
  inboundId: `inb_${String(n).padStart(26, '0')}`,
  occurredAt: '2026-05-01T08:00:00.000Z',
  data: {
    from: 'ann@example.net',
    to: ['support@acme.test'],
    subject: `Help ${n}`,
    messageId: `<m${n}@example.net>`,
    size: 1200,
    attachments: 0,
    auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', arc: 'none' },
    inReplyTo: null,
  },
});
const EPOCH = new Date(0);
const body = (page: EventsPage) => {
  if (page.expired) throw new Error('expired');
  return page.encoded('{"data":', `,"next":"${page.next}","hasMore":${page.hasMore}}`);
};
const cursors = (page: EventsPage) => (page.expired ? 'expired' : page.cursors.join(','));

onEveryPostgres('the event stream page cache', (db) => {
  const append = (tenantId: string, from: number, count: number) =>
    withTransaction(db(), (c) =>
      streamLogEvents(
        c,
        Array.from({ length: count }, (_, i) => received(tenantId, from + i)),
      ),
    );

  it('answers a page read again from memory: the same bytes, one lookup instead of the rows', async () => {
    const T = 'cache-1';
    await append(T, 1, 5);
    const cache = createEventPageCache();
    const first = await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH });
    const again = await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH });
    expect(cursors(again)).toBe('1,2,3');
    expect(body(again)).toBe(body(first)); // the same buffer
    expect(cache.stats()).toMatchObject({ pages: 1, hits: 1, misses: 1 });
    // Another filter, limit or cursor is another page.
    await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH, after: '1' });
    await cache.page(db(), { tenantId: T, limit: 2, cutoff: EPOCH });
    expect(cache.stats()).toMatchObject({ pages: 3, hits: 1, misses: 3 });
  });

  it('keeps a full page while events are appended; a page not full is read again with them', async () => {
    const T = 'cache-2';
    await append(T, 11, 4);
    const cache = createEventPageCache();
    const full = await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH });
    const short = await cache.page(db(), { tenantId: T, after: '2', limit: 3, cutoff: EPOCH });
    expect([cursors(full), cursors(short)]).toEqual(['1,2,3', '3,4']);
    await append(T, 15, 2);
    expect(cursors(await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH }))).toBe('1,2,3');
    expect(cache.stats().hits).toBe(1);
    const grown = await cache.page(db(), { tenantId: T, after: '2', limit: 3, cutoff: EPOCH });
    expect(cursors(grown)).toBe('3,4,5');
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 3 });
    // An empty page at the head (a poller's) is kept until the head moves.
    const head = await cache.page(db(), { tenantId: T, after: '6', limit: 3, cutoff: EPOCH });
    expect(head.expired === false && head.next).toBe('6');
    await cache.page(db(), { tenantId: T, after: '6', limit: 3, cutoff: EPOCH });
    expect(cache.stats().hits).toBe(2);
    await append(T, 17, 1);
    expect(cursors(await cache.page(db(), { tenantId: T, after: '6', limit: 3, cutoff: EPOCH }))).toBe('7');
  });

  it('reads again after an erasure: the erased fields null, never the clear value from memory', async () => {
    const T = 'cache-3';
    await append(T, 21, 3);
    const cache = createEventPageCache();
    const before = await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH });
    expect(body(before).toString()).toContain('ann@example.net');
    await withTransaction(db(), (c) => eraseInboundEvents(c, T, [received(T, 22).inboundId]));
    const after = body(await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH }));
    const events = (JSON.parse(after.toString()) as { data: { cursor: string; data: { from: unknown } }[] })
      .data;
    expect(events.map((e) => e.data.from)).toEqual(['ann@example.net', null, 'ann@example.net']);
    expect(cache.stats().hits).toBe(0);
    // An erasure that rewrites nothing (already erased) leaves the pages.
    await withTransaction(db(), (c) => eraseInboundEvents(c, T, [received(T, 22).inboundId]));
    await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH });
    expect(cache.stats().hits).toBe(1);
  });

  it("reads again after a contact's events are erased", async () => {
    const T = 'cache-3-contact';
    const at = '2026-05-01T08:00:00.000Z';
    await withTransaction(db(), (c) =>
      appendContactEvents(c, T, [
        {
          id: 'evt_c1',
          contactId: 'ct_1',
          type: 'signed_up',
          timestamp: at,
          data: { tenantId: T, contactId: 'ct_1', email: 'bo@example.net', data: { plan: 'pro' } },
        },
      ]),
    );
    const cache = createEventPageCache();
    expect(body(await cache.page(db(), { tenantId: T, limit: 5, cutoff: EPOCH })).toString()).toContain(
      'bo@example.net',
    );
    await withTransaction(db(), (c) => eraseContactEvents(c, T, ['ct_1']));
    expect(body(await cache.page(db(), { tenantId: T, limit: 5, cutoff: EPOCH })).toString()).not.toContain(
      'bo@example.net',
    );
  });

  it('reads again once retention deleted events or the cut-off passed them: 410 for a cursor before them', async () => {
    const T = 'cache-4';
    await append(T, 31, 2);
    // Apart by more than a millisecond on either side: Postgres keeps microseconds, Date milliseconds.
    await new Promise((r) => setTimeout(r, 5));
    const between = new Date();
    await new Promise((r) => setTimeout(r, 5));
    await append(T, 33, 2);
    const cache = createEventPageCache();
    expect(cursors(await cache.page(db(), { tenantId: T, limit: 3, cutoff: EPOCH }))).toBe('1,2,3');
    expect(cursors(await cache.page(db(), { tenantId: T, after: '1', limit: 3, cutoff: EPOCH }))).toBe(
      '2,3,4',
    );
    // The cut-off moves past the first two (retention has not run yet): read again, 410 after 1.
    expect(cursors(await cache.page(db(), { tenantId: T, limit: 3, cutoff: between }))).toBe('3,4');
    expect(cursors(await cache.page(db(), { tenantId: T, after: '1', limit: 3, cutoff: between }))).toBe(
      'expired',
    );
    // Retention deletes them: a page read before, at the old cut-off, is not answered from memory.
    const stale = createEventPageCache();
    await stale.page(db(), { tenantId: T, after: '1', limit: 3, cutoff: EPOCH });
    await withTransaction(db(), (c) => expireEventStream(c, { tenantId: T }, between));
    expect(cursors(await stale.page(db(), { tenantId: T, after: '1', limit: 3, cutoff: EPOCH }))).toBe(
      'expired',
    );
    expect([cache.stats().hits, stale.stats().hits]).toEqual([0, 0]);
  });

  it("leaves a tenant's pages when another tenant appends or erases", async () => {
    const [T, U] = ['cache-5', 'cache-5-other'];
    await append(T, 41, 2);
    await append(U, 43, 2);
    const cache = createEventPageCache();
    await cache.page(db(), { tenantId: T, limit: 5, cutoff: EPOCH });
    await append(U, 45, 1);
    await withTransaction(db(), (c) => eraseInboundEvents(c, U, [received(U, 43).inboundId]));
    expect(cursors(await cache.page(db(), { tenantId: T, limit: 5, cutoff: EPOCH }))).toBe('1,2');
    expect(cache.stats().hits).toBe(1);
  });

  it('shares one head lookup among concurrent reads, never one sent before a read arrived', async () => {
    const T = 'cache-7';
    await append(T, 61, 3);
    const cache = createEventPageCache();
    const q = { tenantId: T, limit: 3, cutoff: EPOCH };
    await cache.page(db(), q);
    // A pool whose lookups are counted, and whose answers can be held back (sent at once).
    let lookups = 0;
    let gate: Promise<void> | undefined;
    const counted = {
      query: async (query: string | pg.QueryConfig, values?: unknown[]) => {
        const answer = typeof query === 'string' ? db().query(query, values) : db().query(query);
        if (typeof query === 'string' && query.includes('FROM event_stream_heads WHERE')) {
          lookups++;
          await gate;
        }
        return answer;
      },
    } as unknown as pg.Pool;
    const twenty = await Promise.all(Array.from({ length: 20 }, () => cache.page(counted, q)));
    expect(new Set(twenty.map((p) => body(p).toString())).size).toBe(1);
    expect(lookups).toBe(2); // the first alone, the other 19 share the next
    expect(cache.stats().hits).toBe(20);
    // A lookup read before an erasure and answered after it: a read arriving after the erasure
    // must not take its answer, but wait for the next lookup.
    let open!: () => void;
    gate = new Promise((r) => {
      open = r;
    });
    const early = cache.page(counted, q);
    await new Promise((r) => setTimeout(r, 50)); // its lookup has read the row
    await withTransaction(db(), (c) => eraseInboundEvents(c, T, [received(T, 61).inboundId]));
    const late = cache.page(counted, q);
    open();
    await early; // began before the erasure: either answer is right
    const events = JSON.parse(body(await late).toString()) as { data: { data: { subject: unknown } }[] };
    expect(events.data.map((e) => e.data.subject)).toEqual([null, 'Help 62', 'Help 63']);
  });

  it('holds at most its bytes (the least recently used go); newest-first pages and 0 bytes keep none', async () => {
    const T = 'cache-6';
    await append(T, 51, 6);
    const small = createEventPageCache({ maxBytes: 6 * 1024 });
    for (let after = 0; after < 6; after++)
      await small.page(db(), { tenantId: T, after: String(after), limit: 1, cutoff: EPOCH });
    const { pages, bytes } = small.stats();
    expect(bytes).toBeLessThanOrEqual(6 * 1024);
    expect(pages).toBeGreaterThan(0);
    expect(pages).toBeLessThan(6);
    const none = createEventPageCache({ maxBytes: 0 });
    const newest = createEventPageCache();
    for (let i = 0; i < 2; i++) {
      await none.page(db(), { tenantId: T, limit: 2, cutoff: EPOCH });
      await newest.page(db(), { tenantId: T, limit: 2, cutoff: EPOCH, order: 'newest' });
    }
    expect([none.stats().pages, newest.stats().pages]).toEqual([0, 0]);
  });
});
