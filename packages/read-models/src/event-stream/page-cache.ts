import { createCoalescer } from '@tern/kernel';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { type EventsPage, type EventsQuery, eventsPage, type PageBasis } from './queries.js';

/**
 * Pages of the event stream kept in memory (SPEC §25; docs/architecture.md "The event stream"). A
 * stream-order page is immutable once read: seqs commit in order (migration 0230), so a full page
 * after a cursor never gains, loses or reorders an event. Only three things change an answer
 * already given, and each moves a column of the tenant's `event_stream_heads` row or the clock:
 *
 * - an append: `last_seq` (a page that was not full, and its `next`);
 * - retention: `expired_through`, and the cut-off passing the oldest event the answer read;
 * - erasure: `revision` (migration 0450), bumped in the erasure's transaction.
 *
 * So a hit costs one primary-key lookup of that row (exact across processes: an erasure committed
 * anywhere is seen by the next read), not the page's 1 000 rows. Newest-first pages (the
 * dashboard's) change with every append and are not kept.
 */
export interface EventPageCache {
  /** `eventsPage(db, q)`, answered from memory when the tenant's stream has not changed under it. */
  page(db: pg.Pool | pg.ClientBase, q: EventsQuery): Promise<EventsPage>;
  /** Pages held and their bytes (metrics, tests). */
  stats(): { pages: number; bytes: number; hits: number; misses: number };
}

/**
 * Bytes of pages one process keeps by default (EVENT_PAGE_CACHE_MB): ≈ 32 pages of 1 000 events of
 * ≈ 500 bytes, each kept as its texts and its body. A page over a quarter of it is not kept.
 */
export const EVENT_PAGE_CACHE_BYTES = 32 * 1024 * 1024;

type Page = Extract<EventsPage, { expired: false }>;
interface Entry {
  page: Page;
  basis: PageBasis;
  size: number;
}

const keyOf = (q: EventsQuery) =>
  JSON.stringify([
    q.tenantId,
    q.after ?? null,
    q.limit,
    q.types && q.types.length > 0 ? q.types : null,
    q.emailId ?? null,
    q.tag ?? null,
    q.projectId ?? null,
  ]);

/** Whether `entry` answers `q` now, given the tenant's row as read now (`null`: no row). */
function holds(entry: Entry, q: EventsQuery, now: Pick<HeadRow, 'head' | 'expired' | 'revision'> | null) {
  const b = entry.basis;
  return (
    now !== null &&
    now.revision === b.revision &&
    now.expired === b.expiredThrough &&
    (entry.page.hasMore || now.head === b.head) &&
    q.cutoff.getTime() <= b.keptSince
  );
}

export function createEventPageCache(opts: { maxBytes?: number | undefined } = {}): EventPageCache {
  const maxBytes = opts.maxBytes ?? EVENT_PAGE_CACHE_BYTES;
  const entries = new LRUCache<string, Entry>({
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (e) => e.size,
  });
  const heads = headReader();
  let hits = 0;
  let misses = 0;
  return {
    async page(db, q) {
      if (q.order === 'newest' || maxBytes <= 0) return eventsPage(db, q);
      const key = keyOf(q);
      const entry = entries.get(key);
      if (entry !== undefined) {
        if (holds(entry, q, await heads.now(db, q.tenantId))) {
          hits++;
          return entry.page;
        }
        entries.delete(key);
      }
      misses++;
      const page = await eventsPage(db, q);
      if (!page.expired && page.basis !== undefined) {
        // The texts (one byte a character, at most two) and the body `encoded` keeps: ≈ 2 bytes a character.
        let size = 256;
        for (const item of page.items) size += item.length * 2 + 64;
        if (size <= maxBytes / 4) entries.set(key, { page, basis: page.basis, size });
      }
      return page;
    },
    stats: () => ({ pages: entries.size, bytes: entries.calculatedSize, hits, misses }),
  };
}

type HeadRow = { tenant_id: string; head: string; expired: string; revision: string };
interface HeadAsk {
  db: pg.Pool | pg.ClientBase;
  tenantId: string;
  row?: HeadRow | null;
}

/**
 * The tenants' head rows, looked up in batches (`createCoalescer`): one statement in flight, the
 * asks arriving meanwhile go in the next, sent after each of them arrived (so an erasure committed
 * before a request is seen). Under 16 concurrent readers that is a fraction of the lookups, each
 * exact for every request it answers. A batch goes through its first ask's pool.
 */
function headReader() {
  const lookup = createCoalescer<HeadAsk>(async (asks) => {
    const { rows } = await asks[0]!.db.query<HeadRow>(
      `SELECT tenant_id, last_seq::text AS head, expired_through::text AS expired, revision::text AS revision
         FROM event_stream_heads WHERE tenant_id = ANY($1::text[])`,
      [[...new Set(asks.map((a) => a.tenantId))]],
    );
    const byTenant = new Map(rows.map((r) => [r.tenant_id, r]));
    for (const ask of asks) ask.row = byTenant.get(ask.tenantId) ?? null;
  });
  return {
    async now(db: pg.Pool | pg.ClientBase, tenantId: string): Promise<HeadRow | null> {
      const ask: HeadAsk = { db, tenantId };
      await lookup(ask);
      return ask.row ?? null;
    },
  };
}
