import type {
  Contact,
  ContactProperty,
  ContactPropertyType,
  ListMeta,
  Segment,
  SegmentFilter,
  Topic,
} from '@tern/contracts/wire';
import { isRecord, itemPath, json, resourceCalls } from './resource.js';
import type { Send } from './transport.js';
import type { RequestOptions } from './types.js';

// Contact properties, topics and segments (SPEC §27): `contacts:read` / `contacts:write`.

export type {
  ContactProperty,
  ContactPropertyType,
  Segment,
  SegmentFilter,
  Topic,
} from '@tern/contracts/wire';

export interface ContactPropertiesApi {
  /** Defines a typed property contacts carry values of (409 when the name exists). */
  create(
    params: { name: string; type: ContactPropertyType },
    options?: RequestOptions,
  ): Promise<ContactProperty>;
  /** Every definition, by name. */
  list(options?: RequestOptions): Promise<{ data: ContactProperty[] }>;
  /** Removes the definition and every contact's value of it. */
  remove(name: string, options?: RequestOptions): Promise<void>;
}

export interface CreateTopicParams {
  name: string;
  default: 'opt_in' | 'opt_out';
  public: boolean;
}

export interface TopicsApi {
  create(params: CreateTopicParams, options?: RequestOptions): Promise<Topic>;
  list(
    params?: { page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<{ data: Topic[]; meta: ListMeta }>;
  get(id: string, options?: RequestOptions): Promise<Topic>;
  update(id: string, params: Partial<CreateTopicParams>, options?: RequestOptions): Promise<Topic>;
  /** 409 while a sequence or a campaign not yet sent names it. */
  remove(id: string, options?: RequestOptions): Promise<void>;
}

export interface SegmentsApi {
  create(params: { name: string; filter: SegmentFilter }, options?: RequestOptions): Promise<Segment>;
  list(
    params?: { page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<{ data: Segment[]; meta: ListMeta }>;
  get(id: string, options?: RequestOptions): Promise<Segment>;
  update(
    id: string,
    params: { name?: string; filter?: SegmentFilter },
    options?: RequestOptions,
  ): Promise<Segment>;
  /** 409 while a draft or scheduled campaign names it. */
  remove(id: string, options?: RequestOptions): Promise<void>;
  /** The contacts the segment matches now, newest first; `meta.total` counts them all. */
  contacts(
    id: string,
    params?: { page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<{ data: Contact[]; meta: ListMeta }>;
  /** How many contacts a filter (not saved) matches now. */
  count(filter: SegmentFilter, options?: RequestOptions): Promise<{ total: number }>;
}

const hasId = (value: unknown) => isRecord(value) && typeof value.id === 'string';
const isPage = (value: unknown) => isRecord(value) && Array.isArray(value.data) && isRecord(value.meta);

export function createContactPropertiesApi(send: Send): ContactPropertiesApi {
  return {
    create: (params, options = {}) =>
      send(
        '/contact-properties',
        {},
        {
          ...json('POST', params),
          check: (v): v is ContactProperty => isRecord(v) && typeof v.name === 'string',
        },
        options,
      ),
    list: (options = {}) =>
      send(
        '/contact-properties',
        {},
        {
          ...json('GET'),
          check: (v): v is { data: ContactProperty[] } => isRecord(v) && Array.isArray(v.data),
        },
        options,
      ),
    remove: (name, options = {}) =>
      send<void>(
        `/contact-properties/${encodeURIComponent(name)}`,
        {},
        { method: 'DELETE', read: 'none' },
        options,
      ),
  };
}

export function createTopicsApi(send: Send): TopicsApi {
  const isTopic = (v: unknown): v is Topic => hasId(v);
  return resourceCalls(send, '/topics', isTopic, (v): v is { data: Topic[]; meta: ListMeta } => isPage(v));
}

export function createSegmentsApi(send: Send): SegmentsApi {
  const path = itemPath('/segments');
  const isSegment = (v: unknown): v is Segment => hasId(v);
  return {
    ...resourceCalls(send, '/segments', isSegment, (v): v is { data: Segment[]; meta: ListMeta } =>
      isPage(v),
    ),
    contacts: (id, params = {}, options = {}) =>
      send(
        `${path(id)}/contacts`,
        { page: params.page, limit: params.limit },
        { ...json('GET'), check: (v): v is { data: Contact[]; meta: ListMeta } => isPage(v) },
        options,
      ),
    count: (filter, options = {}) =>
      send(
        '/segments/count',
        {},
        {
          ...json('POST', { filter }),
          check: (v): v is { total: number } => isRecord(v) && typeof v.total === 'number',
        },
        options,
      ),
  };
}
