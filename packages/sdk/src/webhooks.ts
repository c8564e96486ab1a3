import type * as Wire from '@tern/contracts/wire';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

// Types of `/webhooks*` (SPEC §17): the answers are the contracts' zod-free wire types
// (`@tern/contracts/wire`, which tsconfig.build.json maps for `dts.resolve` to fold into
// index.d.ts), re-exported by index.ts under their own names; a new event type reaches the SDK
// without an edit here.

/** What `webhooks.replay` re-delivers: a time window, or every event after a cursor of `events.list`. */
export type ReplayParams = { since: string | Date; until?: string | Date } | { after: string };

/** A page of a list. */
export type Page<T> = Wire.List<T>;

export interface CreateWebhookParams {
  url: string;
  /** Omit (or null) for every event type. */
  events?: Wire.WebhookEventType[] | null;
  description?: string | null;
}

export interface UpdateWebhookParams {
  url?: string;
  events?: Wire.WebhookEventType[] | null;
  description?: string | null;
  /** true re-enables an endpoint Tern disabled. */
  enabled?: boolean;
}

export interface WebhooksApi {
  create(params: CreateWebhookParams, options?: RequestOptions): Promise<Wire.WebhookEndpointWithSecret>;
  list(
    params?: { page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<Page<Wire.WebhookEndpoint>>;
  get(id: string, options?: RequestOptions): Promise<Wire.WebhookEndpoint>;
  update(id: string, params: UpdateWebhookParams, options?: RequestOptions): Promise<Wire.WebhookEndpoint>;
  remove(id: string, options?: RequestOptions): Promise<void>;
  /** New secret; the old one keeps signing alongside it for 24 h. */
  rotateSecret(id: string, options?: RequestOptions): Promise<Wire.WebhookEndpointWithSecret>;
  deliveries(
    id: string,
    params?: { page?: number; limit?: number; status?: Wire.WebhookDeliveryStatus },
    options?: RequestOptions,
  ): Promise<Page<Wire.WebhookDelivery>>;
  /**
   * Re-delivers past events with their original ids: those with `occurredAt` in [since, until)
   * (until: now), or every event of the stream after the cursor `after` (an event's `cursor` or a
   * page's `next` from `client.events.list`), in stream order.
   */
  replay(id: string, params: ReplayParams, options?: RequestOptions): Promise<Wire.WebhookReplay>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isEndpoint = (v: unknown): v is Wire.WebhookEndpoint =>
  isObject(v) && typeof v.id === 'string' && typeof v.url === 'string' && typeof v.enabled === 'boolean';
const isEndpointWithSecret = (v: unknown): v is Wire.WebhookEndpointWithSecret =>
  isEndpoint(v) && typeof (v as unknown as Record<string, unknown>).secret === 'string';
const isPage = (v: unknown): v is Page<never> => isObject(v) && Array.isArray(v.data) && isObject(v.meta);
const isReplay = (v: unknown): v is Wire.WebhookReplay =>
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
      ) as Promise<Page<Wire.WebhookEndpoint>>,
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
      ) as Promise<Page<Wire.WebhookDelivery>>,
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
