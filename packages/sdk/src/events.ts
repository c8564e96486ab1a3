import type { StreamPage as EventList, StreamEvent as TernEvent } from '@tern/contracts/wire';
import { isTrackedEvent, type TrackEventParams, type TrackedEvent } from './automations.js';
import type { ResolvedConfig } from './config.js';
import { TernApiError } from './errors.js';
import { json } from './resource.js';
import { type ClientDeps, errorFromResponse, type Send } from './transport.js';
import type { RequestOptions } from './types.js';

// The event stream (SPEC §25): `GET /events` and `GET /events/stream`.

/** One event (`TernEvent`: its webhook body, id and cursor) and a page of `GET /events` (`EventList`). */
export type { EventList, TernEvent };

export interface EventFilters {
  /** Only these event types. */
  types?: string[];
  emailId?: string;
  tag?: string;
  /** Only this project's events. */
  project?: string;
}

export interface ListEventsParams extends EventFilters {
  /** Only events after this cursor; omit to start at the oldest event kept. */
  after?: string;
  /** 1..1000, default 100. */
  limit?: number;
}

export interface StreamEventsParams extends EventFilters {
  /** Start after this cursor; omit to start at the oldest event kept. */
  after?: string;
  /** Stops the stream (the iterator returns). A `break` out of `for await` stops it too. */
  signal?: AbortSignal;
}

export interface EventsApi {
  /** One page of `GET /events` (`events:read`). */
  list(params?: ListEventsParams, options?: RequestOptions): Promise<EventList>;
  /**
   * Every event after `after`, then live (`GET /events/stream`): reconnects after a drop from the
   * last id it yielded (`Last-Event-ID`), so nothing is missed or repeated. A 4xx (e.g. 410 for an
   * expired cursor, 403 for a missing scope) ends it with a `TernApiError`.
   */
  stream(params?: StreamEventsParams): AsyncGenerator<TernEvent, void, undefined>;
  /** `POST /events/track` (`events:write`): a custom event of a contact, for automations (SPEC §27). */
  track(params: TrackEventParams, options?: RequestOptions): Promise<TrackedEvent>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const isEventList = (v: unknown): v is EventList =>
  isRecord(v) && Array.isArray(v.data) && typeof v.next === 'string' && typeof v.hasMore === 'boolean';

const filterQuery = (p: EventFilters) => ({
  types: p.types && p.types.length > 0 ? p.types.join(',') : undefined,
  emailId: p.emailId,
  tag: p.tag,
  project: p.project,
});

/** Splits an SSE byte stream into messages (`id`, `data`); comments and other fields are skipped. */
async function* sseMessages(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ id: string | null; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | null = null;
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl = buffer.search(/\r\n|\n|\r/);
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { id, data: data.join('\n') };
          data = [];
          id = null;
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const v = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') data.push(v);
          else if (field === 'id') id = v;
        }
        nl = buffer.search(/\r\n|\n|\r/);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

export function createEventsApi(send: Send, config: ResolvedConfig, deps: ClientDeps): EventsApi {
  return {
    track: (params, options = {}) =>
      send('/events/track', {}, { ...json('POST', params), check: isTrackedEvent }, options),
    list(params = {}, options = {}) {
      return send(
        '/events',
        { after: params.after, limit: params.limit, ...filterQuery(params) },
        { method: 'GET', read: 'json', check: isEventList },
        options,
      );
    },
    async *stream(params = {}) {
      let last = params.after;
      let failures = 0;
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(filterQuery(params))) if (v !== undefined) query.set(k, v);
      while (!params.signal?.aborted) {
        const controller = new AbortController();
        const onAbort = () => controller.abort(params.signal?.reason);
        params.signal?.addEventListener('abort', onAbort, { once: true });
        try {
          const q = new URLSearchParams(query);
          if (last !== undefined) q.set('after', last);
          const res = await config.fetch(`${config.baseUrl}/events/stream?${q}`, {
            method: 'GET',
            headers: {
              Accept: 'text/event-stream',
              Authorization: `Bearer ${config.apiKey}`,
              ...(last !== undefined ? { 'Last-Event-ID': last } : {}),
            },
            signal: controller.signal,
          });
          if (res.status >= 400 && res.status < 500 && res.status !== 429) {
            throw errorFromResponse(res.status, res.statusText, res.headers, await res.text(), deps.now());
          }
          if (res.status === 200 && res.body) {
            failures = 0;
            for await (const message of sseMessages(res.body)) {
              const event = JSON.parse(message.data) as TernEvent;
              last = message.id ?? event.cursor;
              yield event;
            }
          }
        } catch (error) {
          if (params.signal?.aborted) return;
          if (error instanceof TernApiError) throw error;
        } finally {
          params.signal?.removeEventListener('abort', onAbort);
          controller.abort();
        }
        // Dropped: back off (full jitter, at most 30 s), then resume after the last id.
        failures++;
        const ceiling = Math.min(30_000, config.retryBaseDelayMs * 2 ** Math.min(failures, 10));
        try {
          await deps.sleep(deps.random() * ceiling, params.signal);
        } catch {
          return;
        }
      }
    },
  };
}
