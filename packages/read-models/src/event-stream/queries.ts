import type { StreamEvent } from '@tern/contracts/wire';
import type pg from 'pg';

/**
 * Reads of the event stream (SPEC §25): the page behind `GET /events`, the SSE tail, the webhook
 * replay from a cursor and the MCP tool all call `eventsPage` / `listEvents`.
 *
 * A cursor is the event's `seq` in its tenant's stream, in decimal: opaque to clients, stable
 * forever (the order never changes), meaningful only within its tenant.
 */
export const MAX_EVENTS_PAGE = 1000;

/** A valid cursor: 1 to 18 digits (a bigint). */
export function parseEventCursor(cursor: string): bigint | null {
  return /^[0-9]{1,18}$/.test(cursor) ? BigInt(cursor) : null;
}

export interface EventsQuery {
  tenantId: string;
  /** Events strictly after this cursor; absent: from the oldest event kept. */
  after?: string | undefined;
  /**
   * `newest`: the newest events first (a dashboard's view), strictly before `before` when given;
   * `after` is then ignored and `next` is the page's oldest cursor (pass it as `before`).
   */
  order?: 'stream' | 'newest' | undefined;
  before?: string | undefined;
  limit: number;
  /** Events recorded before it are past retention: never read, and a cursor reaching them → `expired`. */
  cutoff: Date;
  types?: readonly string[] | undefined;
  emailId?: string | undefined;
  tag?: string | undefined;
  projectId?: string | undefined;
}

export type EventsPage =
  | {
      expired: false;
      /** The page's events as one JSON array text (`[{ id, cursor, type, timestamp, data }, …]`). */
      json: string;
      /** The same events, one JSON text each (the SSE tail writes them one by one). */
      items: string[];
      /**
       * `head` + the JSON array + `tail`, encoded (a list route's whole body): the events are written
       * into one buffer, so no 1 000-string join, flattening or encoding at the socket (≈ 1 ms for a
       * page of 1 000 where those cost ≈ 3.6 ms, bench/README.md). The last body is kept: a page
       * answered again from `page-cache.ts` sends the same buffer (never written to once made).
       */
      encoded(head: string, tail: string): Buffer;
      cursors: string[];
      count: number;
      /**
       * Where the next read starts: the last event's cursor, or — when the page is not full — the
       * stream's head as of the read (every event up to it was seen, matching the filters or not).
       */
      next: string;
      /** The page is full: more may follow at once. */
      hasMore: boolean;
      /** What the page was read against (a stream-order page only): how `page-cache.ts` knows it still holds. */
      basis?: PageBasis;
    }
  | { expired: true };

/**
 * The state of the tenant's stream a page was read in: the same page answers the same bytes while
 * `head` (unless the page is full), `expiredThrough` and `revision` are unchanged and the cut-off
 * has not passed `keptSince`.
 */
export interface PageBasis {
  head: string;
  expiredThrough: string;
  /** Bumped by every erasure that rewrites the tenant's stored events (migration 0450). */
  revision: string;
  /** The earliest `recorded_at` the answer depends on (ms): the first event's after the cursor. */
  keptSince: number;
}

type Page = Extract<EventsPage, { expired: false }>;

/** A page from its rows: `json` is joined when first read (a getter: never spread this object). */
function pageOf(items: string[], rest: Omit<Page, 'expired' | 'json' | 'items' | 'encoded'>): Page {
  let json: string | undefined;
  let last: { head: string; tail: string; out: Buffer } | undefined;
  return {
    expired: false,
    ...rest,
    items,
    get json() {
      json ??= `[${items.join(',')}]`;
      return json;
    },
    encoded(head, tail) {
      if (last?.head === head && last.tail === tail) return last.out;
      last = { head, tail, out: encode(head, tail) };
      return last.out;
    },
  };
  function encode(head: string, tail: string): Buffer {
    let size = Buffer.byteLength(head) + Buffer.byteLength(tail) + 2 + items.length;
    for (const item of items) size += Buffer.byteLength(item);
    const out = Buffer.allocUnsafe(size);
    let at = out.write(head, 0);
    out[at++] = 0x5b; // [
    for (const [i, item] of items.entries()) {
      if (i > 0) out[at++] = 0x2c; // ,
      at += out.write(item, at);
    }
    out[at++] = 0x5d; // ]
    at += out.write(tail, at);
    return out.subarray(0, at); // one comma fewer than items when there are any
  }
}

/**
 * The page's rows as `[k, seq, json]` arrays (`rowMode: 'array'`): 1 000 small rows cost Postgres and
 * the driver far less than one `string_agg` text of the same bytes (measured: 3× the pages per
 * second, bench/README.md). The event is its stored text (`body`), or, after erasure set it to NULL,
 * the scrubbed payload printed with its cursor.
 */
// Aliased: an output column named `seq` (text) would be what `ORDER BY seq` sorts by.
const PAGE_ROW = `1 AS k, seq::text AS c, COALESCE(body, (payload || jsonb_build_object('cursor', seq::text))::text) AS j`;
const FILTERS = `AND ($5::text[] IS NULL OR type = ANY($5::text[]))
          AND ($6::text IS NULL OR email_id = $6)
          AND ($7::text IS NULL OR tags @> ARRAY[$7::text])
          AND ($8::text IS NULL OR project_id = $8)`;

/** `$5` to `$8` of FILTERS: the types, email, tag and project a query keeps to (null: any). */
const filterValues = (q: EventsQuery) => [
  q.types && q.types.length > 0 ? [...q.types] : null,
  q.emailId ?? null,
  q.tag ?? null,
  q.projectId ?? null,
];

/** The rows of a page in the order asked (`descending`), whatever order Postgres appended them in. */
function pageRows(rows: unknown[][], descending: boolean): { cursors: string[]; items: string[] } {
  const page = rows.filter((r) => r[0] === 1) as [number, string, string][];
  // Seqs as decimal texts without leading zeros: the longer is the larger (no BigInt per row).
  const order = (x: [number, string, string], y: [number, string, string]) => {
    const c = x[1].length - y[1].length || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
    return descending ? -c : c;
  };
  let sorted = true;
  for (let i = 1; i < page.length && sorted; i++) sorted = order(page[i - 1]!, page[i]!) < 0;
  if (!sorted) page.sort(order);
  return { cursors: page.map((r) => r[1]), items: page.map((r) => r[2]) };
}

/**
 * One page of a tenant's events after a cursor, in `seq` order, in ONE statement (one snapshot):
 * the page, the head and the retention check agree. The first row (`k` 0) holds the head, the
 * retention mark and the time of the first event after the cursor; the page's rows follow (`k` 1).
 * A cursor before the oldest event kept (deleted by retention, or recorded before `cutoff`) is
 * `expired` (410).
 */
export async function eventsPage(db: pg.Pool | pg.ClientBase, q: EventsQuery): Promise<EventsPage> {
  const after = q.after === undefined ? null : parseEventCursor(q.after);
  if (q.after !== undefined && after === null) throw new Error('invalid event cursor');
  const limit = Math.max(1, Math.min(MAX_EVENTS_PAGE, Math.trunc(q.limit)));
  if (q.order === 'newest') return newestPage(db, q, limit);
  const { rows } = await db.query<unknown[]>({
    text: `SELECT 0 AS k, h.last_seq::text AS c, h.expired_through::text AS j,
            (SELECT recorded_at FROM event_stream f WHERE f.tenant_id = $1 AND f.seq > $2
              ORDER BY f.seq LIMIT 1) AS first_at, h.revision::text AS r
       FROM (SELECT 1) one LEFT JOIN event_stream_heads h ON h.tenant_id = $1
     UNION ALL
     (SELECT ${PAGE_ROW}, NULL, NULL FROM event_stream
        WHERE tenant_id = $1 AND seq > $2 AND recorded_at >= $4
          ${FILTERS}
        ORDER BY seq LIMIT $3)`,
    values: [q.tenantId, (after ?? 0n).toString(), limit, q.cutoff, ...filterValues(q)],
    rowMode: 'array',
  });
  const meta = rows.find((r) => r[0] === 0) as
    | [number, string | null, string | null, Date | null, string | null]
    | undefined;
  const head = BigInt(meta?.[1] ?? '0');
  const expiredThrough = BigInt(meta?.[2] ?? '0');
  const firstAt = meta?.[3] ?? null;
  // A cursor given explicitly must not skip what retention took: the events right after it are gone.
  if (after !== null && (after < expiredThrough || (firstAt !== null && firstAt < q.cutoff)))
    return { expired: true };
  const { cursors, items } = pageRows(rows, false);
  const count = items.length;
  const hasMore = count === limit;
  const from = after ?? 0n;
  const next = hasMore ? cursors[count - 1]! : (head > from ? head : from).toString();
  // `recorded_at` grows with `seq` in a tenant (each row is inserted under the head's lock, after the
  // previous holder committed): the first event after the cursor is the oldest the answer read.
  const basis = {
    head: head.toString(),
    expiredThrough: expiredThrough.toString(),
    revision: meta?.[4] ?? '0',
    keptSince: firstAt?.getTime() ?? Infinity,
  };
  return pageOf(items, { cursors, count, next, hasMore, basis });
}

/**
 * The newest events first, before a cursor: what a person looks at (the dashboard's Events page),
 * then follows with the tail after the first one. Retention hides what it hides; a `before` past
 * it is simply an empty page (nothing older is kept), not a 410.
 */
async function newestPage(db: pg.Pool | pg.ClientBase, q: EventsQuery, limit: number): Promise<EventsPage> {
  const before = q.before === undefined ? null : parseEventCursor(q.before);
  if (q.before !== undefined && before === null) throw new Error('invalid event cursor');
  const { rows } = await db.query<unknown[]>({
    text: `SELECT ${PAGE_ROW} FROM event_stream
        WHERE tenant_id = $1 AND ($2::bigint IS NULL OR seq < $2) AND recorded_at >= $4
          ${FILTERS}
        ORDER BY seq DESC LIMIT $3`,
    values: [q.tenantId, before?.toString() ?? null, limit, q.cutoff, ...filterValues(q)],
    rowMode: 'array',
  });
  const { cursors, items } = pageRows(rows, true);
  const count = items.length;
  return pageOf(items, {
    cursors,
    count,
    next: cursors[count - 1] ?? before?.toString() ?? '0',
    hasMore: count === limit,
  });
}

/** One event of the stream: its webhook body (SPEC §17), its id and its cursor (the API's own type). */
export type { StreamEvent };

/** `eventsPage` as objects (the MCP tool, the webhook replay, tests). */
export async function listEvents(
  db: pg.Pool | pg.ClientBase,
  q: EventsQuery,
): Promise<{ expired: true } | { expired: false; data: StreamEvent[]; next: string; hasMore: boolean }> {
  const page = await eventsPage(db, q);
  if (page.expired) return page;
  return {
    expired: false,
    data: JSON.parse(page.json) as StreamEvent[],
    next: page.next,
    hasMore: page.hasMore,
  };
}

/**
 * Read-your-writes (SPEC §25, issue 49 item 5): whether every one of these event ids of the tenant
 * has been folded into the read models (the stream is written in the same transaction as the
 * email log and the timeline).
 */
export async function eventsProjected(
  db: pg.Pool | pg.ClientBase,
  tenantId: string,
  eventIds: readonly string[],
): Promise<boolean> {
  if (eventIds.length === 0) return true;
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM event_stream WHERE tenant_id = $1 AND event_id = ANY($2::text[])',
    [tenantId, [...new Set(eventIds)]],
  );
  return (rows[0]?.n ?? 0) >= new Set(eventIds).size;
}

/** Events one webhook replay from a cursor delivers at most (SPEC §25); more → `hasMore`. */
export const MAX_REPLAY_EVENTS = 10_000;

export type ReplayRange =
  | { kind: 'expired' }
  /** The cursor is past the tenant's head: no event has it yet. */
  | { kind: 'ahead'; head: string }
  | { kind: 'range'; through: string; count: number; hasMore: boolean };

/**
 * What a webhook replay from `after` covers (SPEC §25), in ONE statement: the events of the types
 * `types` (null: all) after it, up to the stream's head or the `max`-th of them. Expired like
 * `eventsPage`: a cursor whose next events retention took → `expired` (410).
 */
export async function eventsReplayRange(
  db: pg.Pool | pg.ClientBase,
  q: { tenantId: string; after: bigint; cutoff: Date; types: readonly string[] | null; max?: number },
): Promise<ReplayRange> {
  const max = Math.max(1, Math.trunc(q.max ?? MAX_REPLAY_EVENTS));
  const { rows } = await db.query<{
    head: string | null;
    expired_through: string | null;
    first_at: Date | null;
    n: number;
    nth: string | null;
  }>(
    `WITH matching AS (
       SELECT seq FROM event_stream
        WHERE tenant_id = $1 AND seq > $2 AND recorded_at >= $3
          AND ($4::text[] IS NULL OR type = ANY($4::text[]))
        ORDER BY seq LIMIT $5 + 1)
     SELECT h.last_seq::text AS head, h.expired_through::text AS expired_through,
            (SELECT recorded_at FROM event_stream f WHERE f.tenant_id = $1 AND f.seq > $2
              ORDER BY f.seq LIMIT 1) AS first_at,
            (SELECT count(*)::int FROM matching) AS n,
            (SELECT seq::text FROM matching ORDER BY seq OFFSET $5 - 1 LIMIT 1) AS nth
       FROM (SELECT 1) one LEFT JOIN event_stream_heads h ON h.tenant_id = $1`,
    [q.tenantId, q.after.toString(), q.cutoff, q.types && q.types.length > 0 ? [...q.types] : null, max],
  );
  const row = rows[0];
  const head = BigInt(row?.head ?? '0');
  const expiredThrough = BigInt(row?.expired_through ?? '0');
  if (q.after < expiredThrough || (row?.first_at != null && row.first_at < q.cutoff))
    return { kind: 'expired' };
  if (q.after > head) return { kind: 'ahead', head: head.toString() };
  const n = row?.n ?? 0;
  if (n > max) return { kind: 'range', through: row?.nth ?? head.toString(), count: max, hasMore: true };
  return { kind: 'range', through: head.toString(), count: n, hasMore: false };
}

/**
 * The tenant's head of the stream (its last seq, 0 before any event) as a scalar subquery, for a
 * statement of another owner that starts following the stream there (the automation follower of
 * packages/bulk). `tenant` is a `$n` parameter.
 */
export const eventStreamHeadSql = (tenant: string) =>
  `COALESCE((SELECT last_seq FROM event_stream_heads WHERE tenant_id = ${tenant}), 0)`;
