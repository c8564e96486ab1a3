import type { WebhookEventType } from '@tern/contracts/event-types';
import type { Send } from './transport.js';
import type { ListMeta, RequestOptions } from './types.js';

// Types of `/webhooks*` (SPEC §17), spelled out so the published declarations stay free of zod.
// The event type names are the contracts' zod-free list (`@tern/contracts/event-types`, which
// tsconfig.build.json maps for `dts.resolve` to fold into index.d.ts): a new event type reaches
// the SDK without an edit here.

export type { WebhookEventType };

export interface WebhookEndpoint {
  id: string;
  url: string;
  /** null = every event type. */
  events: WebhookEventType[] | null;
  description: string | null;
  enabled: boolean;
  /** Why Tern disabled it (failing for 5 days); null otherwise. */
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Create and rotate answers: the only times the signing secret is shown. */
export interface WebhookEndpointWithSecret extends WebhookEndpoint {
  secret: string;
}

export interface WebhookAttempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookDelivery {
  id: string;
  /** The `webhook-id` header: the event's id, the same on every retry and replay. */
  webhookId: string;
  eventType: string;
  emailId: string;
  replayId: string | null;
  status: WebhookDeliveryStatus;
  attempts: WebhookAttempt[];
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookReplay {
  id: string;
  webhookId: string;
  /** A window replay's start and end; null for a replay from a cursor. */
  since: string | null;
  until: string | null;
  /** A replay from a cursor: the cursor given and the last cursor covered; null for a window replay. */
  after: string | null;
  through: string | null;
  /** Stopped at 10 000 events: replay again with `{ after: through }` for the rest. */
  hasMore: boolean;
  status: 'pending' | 'running' | 'done';
}

/** What `webhooks.replay` re-delivers: a time window, or every event after a cursor of `events.list`. */
export type ReplayParams = { since: string | Date; until?: string | Date } | { after: string };

export interface Page<T> {
  data: T[];
  meta: ListMeta;
}

export interface CreateWebhookParams {
  url: string;
  /** Omit (or null) for every event type. */
  events?: WebhookEventType[] | null;
  description?: string | null;
}

export interface UpdateWebhookParams {
  url?: string;
  events?: WebhookEventType[] | null;
  description?: string | null;
  /** true re-enables an endpoint Tern disabled. */
  enabled?: boolean;
}

export interface WebhooksApi {
  create(params: CreateWebhookParams, options?: RequestOptions): Promise<WebhookEndpointWithSecret>;
  list(params?: { page?: number; limit?: number }, options?: RequestOptions): Promise<Page<WebhookEndpoint>>;
  get(id: string, options?: RequestOptions): Promise<WebhookEndpoint>;
  update(id: string, params: UpdateWebhookParams, options?: RequestOptions): Promise<WebhookEndpoint>;
  remove(id: string, options?: RequestOptions): Promise<void>;
  /** New secret; the old one keeps signing alongside it for 24 h. */
  rotateSecret(id: string, options?: RequestOptions): Promise<WebhookEndpointWithSecret>;
  deliveries(
    id: string,
    params?: { page?: number; limit?: number; status?: WebhookDeliveryStatus },
    options?: RequestOptions,
  ): Promise<Page<WebhookDelivery>>;
  /**
   * Re-delivers past events with their original ids: those with `occurredAt` in [since, until)
   * (until: now), or every event of the stream after the cursor `after` (an event's `cursor` or a
   * page's `next` from `client.events.list`), in stream order.
   */
  replay(id: string, params: ReplayParams, options?: RequestOptions): Promise<WebhookReplay>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isEndpoint = (v: unknown): v is WebhookEndpoint =>
  isObject(v) && typeof v.id === 'string' && typeof v.url === 'string' && typeof v.enabled === 'boolean';
const isEndpointWithSecret = (v: unknown): v is WebhookEndpointWithSecret =>
  isEndpoint(v) && typeof (v as unknown as Record<string, unknown>).secret === 'string';
const isPage = (v: unknown): v is Page<never> => isObject(v) && Array.isArray(v.data) && isObject(v.meta);
const isReplay = (v: unknown): v is WebhookReplay =>
  isObject(v) && typeof v.id === 'string' && typeof v.hasMore === 'boolean';

const iso = (d: string | Date) => (typeof d === 'string' ? d : d.toISOString());
const at = (id: string) => `/webhooks/${encodeURIComponent(id)}`;

const json = (body: unknown) => JSON.stringify(body);

export function createWebhooksApi(send: Send): WebhooksApi {
  return {
    create: (params, options = {}) =>
      send(
        '/webhooks',
        {},
        { method: 'POST', body: json(params), read: 'json', check: isEndpointWithSecret },
        options,
      ),
    list: (params = {}, options = {}) =>
      send(
        '/webhooks',
        { page: params.page, limit: params.limit },
        { method: 'GET', read: 'json', check: isPage },
        options,
      ) as Promise<Page<WebhookEndpoint>>,
    get: (id, options = {}) => send(at(id), {}, { method: 'GET', read: 'json', check: isEndpoint }, options),
    update: (id, params, options = {}) =>
      send(at(id), {}, { method: 'PATCH', body: json(params), read: 'json', check: isEndpoint }, options),
    remove: (id, options = {}) => send<void>(at(id), {}, { method: 'DELETE', read: 'none' }, options),
    rotateSecret: (id, options = {}) =>
      send(
        `${at(id)}/rotate-secret`,
        {},
        { method: 'POST', read: 'json', check: isEndpointWithSecret },
        options,
      ),
    deliveries: (id, params = {}, options = {}) =>
      send(
        `${at(id)}/deliveries`,
        { page: params.page, limit: params.limit, status: params.status },
        { method: 'GET', read: 'json', check: isPage },
        options,
      ) as Promise<Page<WebhookDelivery>>,
    replay: (id, params, options = {}) =>
      send(
        `${at(id)}/replay`,
        {},
        {
          method: 'POST',
          body: json(
            'after' in params
              ? { after: params.after }
              : {
                  since: iso(params.since),
                  ...(params.until === undefined ? {} : { until: iso(params.until) }),
                },
          ),
          read: 'json',
          check: isReplay,
        },
        options,
      ),
  };
}
