import type { ServerResponse } from 'node:http';
import { type EventsPage, type EventsQuery, eventsPage } from '@tern/read-models';
import type pg from 'pg';

/** What a stream wants: its tenant's events matching these filters. */
export interface TailFilter {
  types?: readonly string[] | undefined;
  emailId?: string | undefined;
  tag?: string | undefined;
  projectId?: string | undefined;
}

interface Tail {
  tenantId: string;
  filter: TailFilter;
  res: ServerResponse;
  /** Every event up to this cursor was handled (sent, or not matching). */
  cursor: bigint;
  closed: boolean;
}

interface TenantGroup {
  tenantId: string;
  /** Every event up to it was fetched and handed to the live members. */
  lastSeq: bigint;
  members: Set<Tail>;
  version: string | null;
  polledAt: number;
  busy: boolean;
}

export interface TailHubOptions {
  pool: pg.Pool;
  /** The stream's cut-off for a tenant (EVENT_STREAM_DAYS, its retention). */
  cutoffOf(tenantId: string): Promise<Date>;
  /** A token that changes when the tenant's read models changed (the read-model feed), or null: poll. */
  versionOf(tenantId: string): string | null;
  /** How often a tenant group looks at its version (default 100 ms); without one it reads every `pollMs`. */
  tickMs?: number;
  pollMs?: number;
  /** A comment line every this often (SPEC §25: 15 s). */
  heartbeatMs?: number;
  /** Open streams in all, and per tenant. */
  maxStreams?: number;
  maxStreamsPerTenant?: number;
  /** A client this far behind (bytes queued in its socket) is closed: it resumes with Last-Event-ID. */
  maxQueuedBytes?: number;
  /** How a page is read (default `eventsPage`): the routes pass their page cache's. */
  readPage?: (db: pg.Pool, q: EventsQuery) => Promise<EventsPage>;
}

const PAGE = 1000;

/** What the filters of a stream look at in an event. */
interface EventMeta {
  type: string;
  data: Record<string, unknown>;
}

/** One SSE message: `id:` the event's cursor, `data:` its JSON (one line: JSON text holds no raw newline). */
const sseFrame = (cursor: string, json: string) => `id: ${cursor}\ndata: ${json}\n\n`;
/** The messages of a page's events, as one string. */
function sseFrames(items: readonly string[], cursors: readonly string[]): string {
  let out = '';
  for (let i = 0; i < items.length; i++) out += sseFrame(cursors[i]!, items[i]!);
  return out;
}

/**
 * The live tails of `GET /events/stream` (SPEC §25) in one process. A stream first catches up on
 * its own (pages of its filters), then joins its tenant's group: one read per tenant and change,
 * whatever the number of its streams, each event handed to the members it matches. A member's
 * cursor only moves forward and an event is written only past it: nothing twice; the group reads
 * from its own `lastSeq`, which a member joins only once its cursor has reached it: nothing missed.
 */
export function createTailHub(opts: TailHubOptions) {
  const tickMs = opts.tickMs ?? 100;
  const pollMs = opts.pollMs ?? 1000;
  const maxStreams = opts.maxStreams ?? 10_000;
  const maxPerTenant = opts.maxStreamsPerTenant ?? 1_000;
  const maxQueued = opts.maxQueuedBytes ?? 8 * 2 ** 20;
  const groups = new Map<string, TenantGroup>();
  const tails = new Set<Tail>();
  const perTenant = new Map<string, number>();

  const filtered = (f: TailFilter) =>
    (f.types !== undefined && f.types.length > 0) ||
    f.emailId !== undefined ||
    f.tag !== undefined ||
    f.projectId !== undefined;
  const matches = (f: TailFilter, e: EventMeta) =>
    (f.types === undefined || f.types.length === 0 || f.types.includes(e.type)) &&
    (f.emailId === undefined || e.data.emailId === f.emailId) &&
    (f.tag === undefined || (Array.isArray(e.data.tags) && e.data.tags.includes(f.tag))) &&
    (f.projectId === undefined || e.data.projectId === f.projectId);

  function close(tail: Tail) {
    if (tail.closed) return;
    tail.closed = true;
    tails.delete(tail);
    perTenant.set(tail.tenantId, (perTenant.get(tail.tenantId) ?? 1) - 1);
    const group = groups.get(tail.tenantId);
    group?.members.delete(tail);
    if (group && group.members.size === 0) groups.delete(tail.tenantId);
    if (!tail.res.writableEnded) tail.res.end();
  }

  /** Writes `chunk` (whole SSE messages) to a stream whose cursor then is `cursor`. */
  function send(tail: Tail, chunk: string | Buffer, cursor: bigint) {
    tail.res.write(chunk);
    tail.cursor = cursor;
    if (tail.res.writableLength > maxQueued) close(tail);
  }

  async function page(tenantId: string, after: bigint, filter: TailFilter): Promise<EventsPage> {
    const q: EventsQuery = {
      tenantId,
      after: after.toString(),
      limit: PAGE,
      cutoff: await opts.cutoffOf(tenantId),
      ...filter,
    };
    return (opts.readPage ?? eventsPage)(opts.pool, q);
  }

  /** Catches a new stream up with pages of its own filters, then joins its tenant's group. */
  async function catchUp(tail: Tail) {
    for (;;) {
      const group = groups.get(tail.tenantId);
      // Joined synchronously once the stream has reached what the group handed out.
      if (group !== undefined && tail.cursor >= group.lastSeq) {
        group.members.add(tail);
        return;
      }
      const p = await page(tail.tenantId, tail.cursor, tail.filter);
      if (tail.closed) return;
      if (p.expired) return close(tail);
      // The page in one write: one syscall per page, not per event.
      if (p.count > 0) send(tail, sseFrames(p.items, p.cursors), BigInt(p.cursors[p.count - 1]!));
      if (tail.closed) return;
      tail.cursor = BigInt(p.next) > tail.cursor ? BigInt(p.next) : tail.cursor;
      if (p.hasMore) continue;
      if (!groups.has(tail.tenantId)) {
        groups.set(tail.tenantId, {
          tenantId: tail.tenantId,
          lastSeq: tail.cursor,
          members: new Set([tail]),
          version: opts.versionOf(tail.tenantId),
          polledAt: Date.now(),
          busy: false,
        });
        return;
      }
    }
  }

  /**
   * Hands a page of the group's (unfiltered) events to its members, ONE write per member: a member
   * without filters whose cursor is before the page gets the same bytes as every other such member
   * (encoded once); the others get the messages past their cursor that match their filters (each
   * event's metadata parsed at most once per page).
   */
  function handOut(group: TenantGroup, p: Extract<EventsPage, { expired: false }>) {
    const seqs = p.cursors.map((c) => BigInt(c));
    const first = seqs[0]!;
    const last = seqs[p.count - 1]!;
    let frames: string[] | undefined;
    let all: Buffer | undefined;
    const metas: (EventMeta | undefined)[] = [];
    const meta = (i: number) => {
      metas[i] ??= JSON.parse(p.items[i]!) as EventMeta;
      return metas[i];
    };
    for (const tail of group.members) {
      if (tail.cursor >= last) continue;
      if (tail.cursor < first && !filtered(tail.filter)) {
        all ??= Buffer.from(sseFrames(p.items, p.cursors));
        send(tail, all, last);
        continue;
      }
      frames ??= p.items.map((json, i) => sseFrame(p.cursors[i]!, json));
      let chunk = '';
      for (let i = 0; i < p.count; i++)
        if (seqs[i]! > tail.cursor && matches(tail.filter, meta(i))) chunk += frames[i]!;
      if (chunk === '') tail.cursor = last;
      else send(tail, chunk, last);
    }
  }

  /** Reads a group's new events (unfiltered) and hands each to the members past whose cursor it is. */
  async function advance(group: TenantGroup) {
    group.busy = true;
    try {
      for (;;) {
        const p = await page(group.tenantId, group.lastSeq, {});
        if (p.expired) {
          for (const tail of group.members) close(tail);
          return;
        }
        if (p.count > 0) handOut(group, p);
        const next = BigInt(p.next);
        if (next > group.lastSeq) group.lastSeq = next;
        for (const tail of group.members) if (tail.cursor < group.lastSeq) tail.cursor = group.lastSeq;
        if (!p.hasMore) return;
      }
    } finally {
      group.busy = false;
    }
  }

  const ticker = setInterval(() => {
    const now = Date.now();
    for (const group of groups.values()) {
      if (group.busy) continue;
      const version = opts.versionOf(group.tenantId);
      const due = version === null ? now - group.polledAt >= pollMs : version !== group.version;
      if (!due) continue;
      group.version = version;
      group.polledAt = now;
      // A failed read is retried at the next tick (the version is taken again).
      advance(group).catch(() => {
        group.version = null;
      });
    }
  }, tickMs);
  ticker.unref();
  const heartbeat = setInterval(() => {
    for (const tail of tails) tail.res.write(': keep-alive\n\n');
  }, opts.heartbeatMs ?? 15_000);
  heartbeat.unref();

  return {
    /** Whether another stream of this tenant may open (else 429). */
    admits(tenantId: string): boolean {
      return tails.size < maxStreams && (perTenant.get(tenantId) ?? 0) < maxPerTenant;
    },
    /** Starts a stream on `res` (headers already written) after `cursor`. */
    open(tenantId: string, filter: TailFilter, res: ServerResponse, cursor: bigint): void {
      const tail: Tail = { tenantId, filter, res, cursor, closed: false };
      tails.add(tail);
      perTenant.set(tenantId, (perTenant.get(tenantId) ?? 0) + 1);
      res.on('close', () => close(tail));
      catchUp(tail).catch(() => close(tail));
    },
    get size() {
      return tails.size;
    },
    close(): void {
      clearInterval(ticker);
      clearInterval(heartbeat);
      for (const tail of [...tails]) close(tail);
    },
  };
}
export type TailHub = ReturnType<typeof createTailHub>;
