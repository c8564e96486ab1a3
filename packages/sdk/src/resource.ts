import type { List } from '@tern/contracts/wire';
import type { Send } from './transport.js';
import type { ListMeta, RequestOptions } from './types.js';

// What the resource modules share: the spec of a JSON call, the checks of a record and a page, and
// the five calls every tenant resource of the API has (create, list, get, update, remove).

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The check of a page `{ data, meta }` whose every item passes `item`. */
export const isList =
  <T>(item: (v: unknown) => v is T) =>
  (value: unknown): value is { data: T[]; meta: ListMeta } =>
    isRecord(value) && Array.isArray(value.data) && isRecord(value.meta) && value.data.every(item);

/** The check of an item: a record with a string `id` whose other fields pass `rest`. */
export const isItemWith =
  <T>(rest: (value: Record<string, unknown>) => boolean) =>
  (value: unknown): value is T =>
    isRecord(value) && typeof value.id === 'string' && rest(value);

/** The check of an item with a `steps` list (an automation, a sequence). */
export const hasSteps = (value: Record<string, unknown>) => Array.isArray(value.steps);

/** The check of an item with a `state` (an automation's run, a sequence's enrollment). */
export const hasState = (value: Record<string, unknown>) => typeof value.state === 'string';

/** The spec of a call answered with JSON: `method`, and `body` sent as JSON when there is one. */
export const json = (method: 'GET' | 'POST' | 'PATCH', body?: unknown) => ({
  method,
  read: 'json' as const,
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

/** `GET path?query`, its JSON answer checked by `check`. */
export const getJson = <T>(
  send: Send,
  path: string,
  query: Record<string, number | string | undefined>,
  check: (v: unknown) => v is T,
  options: RequestOptions,
) => send(path, query, { ...json('GET'), check }, options);

/** The calls `resourceCalls` makes, of a resource of items `T` created from `Create`, changed by `Update`. */
export interface ResourceApi<T, Create, Update> {
  create(params: Create, options?: RequestOptions): Promise<T>;
  list(params?: { page?: number; limit?: number }, options?: RequestOptions): Promise<List<T>>;
  get(id: string, options?: RequestOptions): Promise<T>;
  update(id: string, params: Update, options?: RequestOptions): Promise<T>;
  remove(id: string, options?: RequestOptions): Promise<void>;
}

/** The URL of one item of the resource under `base`: `itemPath('/campaigns')('c 1')` is `/campaigns/c%201`. */
export const itemPath = (base: string) => (id: string) => `${base}/${encodeURIComponent(id)}`;

/**
 * The calls of a resource under `base` (`/campaigns`): `POST base`, `GET base?page&limit`, and
 * `GET`, `PATCH`, `DELETE base/:id`; an item's answer checked by `isItem`, a page's by `isPage`.
 */
export function resourceCalls<T, P>(
  send: Send,
  base: string,
  isItem: (v: unknown) => v is T,
  isPage: (v: unknown) => v is P,
) {
  const path = itemPath(base);
  return {
    create: (params: unknown, options: RequestOptions = {}) =>
      send(base, {}, { ...json('POST', params), check: isItem }, options),
    list: (params: { page?: number; limit?: number } = {}, options: RequestOptions = {}) =>
      send(base, { page: params.page, limit: params.limit }, { ...json('GET'), check: isPage }, options),
    get: (id: string, options: RequestOptions = {}) =>
      send(path(id), {}, { ...json('GET'), check: isItem }, options),
    update: (id: string, params: unknown, options: RequestOptions = {}) =>
      send(path(id), {}, { ...json('PATCH', params), check: isItem }, options),
    remove: (id: string, options: RequestOptions = {}) =>
      send<void>(path(id), {}, { method: 'DELETE', read: 'none' }, options),
  };
}

/**
 * `GET base/:id/<child>?state&page&limit`: one page of an item's runs or enrollments, optionally of
 * one state, checked by `isPage`.
 */
export const childListCall =
  <P>(send: Send, base: string, child: string, isPage: (v: unknown) => v is P) =>
  (
    id: string,
    params: { state?: string; page?: number; limit?: number } = {},
    options: RequestOptions = {},
  ) =>
    getJson(
      send,
      `${itemPath(base)(id)}/${child}`,
      { state: params.state, page: params.page, limit: params.limit },
      isPage,
      options,
    );
