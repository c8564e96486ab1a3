import type * as Wire from '@tern/contracts/wire';
import { isRecord, itemPath, json, resourceCalls } from './resource.js';
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

const isEndpoint = (v: unknown): v is Wire.WebhookEndpoint =>
  isRecord(v) && typeof v.id === 'string' && typeof v.url === 'string' && typeof v.enabled === 'boolean';
const isEndpointWithSecret = (v: unknown): v is Wire.WebhookEndpointWithSecret =>
  isEndpoint(v) && typeof (v as unknown as Record<string, unknown>).secret === 'string';
const isPage = (v: unknown): v is Page<never> => isRecord(v) && Array.isArray(v.data) && isRecord(v.meta);
const isReplay = (v: unknown): v is Wire.WebhookReplay =>
  isRecord(v) && typeof v.id === 'string' && typeof v.hasMore === 'boolean';

const iso = (d: string | Date) => (typeof d === 'string' ? d : d.toISOString());

export function createWebhooksApi(send: Send): WebhooksApi {
  const at = itemPath('/webhooks');
  return {
    ...resourceCalls(send, '/webhooks', isEndpoint, isPage),
    create: (params, options = {}) =>
      send('/webhooks', {}, { ...json('POST', params), check: isEndpointWithSecret }, options),
    rotateSecret: (id, options = {}) =>
      send(`${at(id)}/rotate-secret`, {}, { ...json('POST'), check: isEndpointWithSecret }, options),
    deliveries: (id, params = {}, options = {}) =>
      send(
        `${at(id)}/deliveries`,
        { page: params.page, limit: params.limit, status: params.status },
        { ...json('GET'), check: isPage },
        options,
      ) as Promise<Page<Wire.WebhookDelivery>>,
    replay: (id, params, options = {}) =>
      send(
        `${at(id)}/replay`,
        {},
        {
          ...json(
            'POST',
            'after' in params
              ? { after: params.after }
              : {
                  since: iso(params.since),
                  ...(params.until === undefined ? {} : { until: iso(params.until) }),
                },
          ),
          check: isReplay,
        },
        options,
      ),
  };
}
