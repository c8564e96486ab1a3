import type { Automation, AutomationRun, AutomationStep, List } from '@tern/contracts/wire';
import type { Send } from './transport.js';
import type { ListMeta, RequestOptions } from './types.js';

// Automations (SPEC §27): `/automations`, their runs, and `POST /events/track` (`client.events.track`).

export type { Automation, AutomationFilter, AutomationRun, AutomationStep } from '@tern/contracts/wire';

export interface CreateAutomationParams {
  name: string;
  /** Required when a step sends. */
  from?: string;
  /** `contact.created`, `contact.updated`, a delivery event type, `email.received` or a custom event name. */
  trigger: { event: string };
  steps: AutomationStep[];
  /** Default true. */
  enabled?: boolean;
}

export interface UpdateAutomationParams {
  name?: string;
  from?: string;
  trigger?: { event: string };
  steps?: AutomationStep[];
  enabled?: boolean;
}

export type AutomationList = List<Automation>;

export type AutomationRunList = List<AutomationRun>;

export interface AutomationsApi {
  create(params: CreateAutomationParams, options?: RequestOptions): Promise<Automation>;
  list(params?: { page?: number; limit?: number }, options?: RequestOptions): Promise<AutomationList>;
  get(id: string, options?: RequestOptions): Promise<Automation>;
  update(id: string, params: UpdateAutomationParams, options?: RequestOptions): Promise<Automation>;
  remove(id: string, options?: RequestOptions): Promise<void>;
  /** The automation's runs, newest first, optionally of one state. */
  runs(
    id: string,
    params?: { state?: AutomationRun['state']; page?: number; limit?: number },
    options?: RequestOptions,
  ): Promise<AutomationRunList>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isAutomation = (value: unknown): value is Automation =>
  isRecord(value) && typeof value.id === 'string' && Array.isArray(value.steps);
const isList =
  <T>(item: (v: unknown) => v is T) =>
  (value: unknown): value is { data: T[]; meta: ListMeta } =>
    isRecord(value) && Array.isArray(value.data) && isRecord(value.meta) && value.data.every(item);
const isRun = (value: unknown): value is AutomationRun =>
  isRecord(value) && typeof value.id === 'string' && typeof value.state === 'string';

const path = (id: string) => `/automations/${encodeURIComponent(id)}`;

export function createAutomationsApi(send: Send): AutomationsApi {
  return {
    create: (params, options = {}) =>
      send(
        '/automations',
        {},
        { method: 'POST', body: JSON.stringify(params), read: 'json', check: isAutomation },
        options,
      ),
    list: (params = {}, options = {}) =>
      send(
        '/automations',
        { page: params.page, limit: params.limit },
        { method: 'GET', read: 'json', check: isList(isAutomation) },
        options,
      ),
    get: (id, options = {}) =>
      send(path(id), {}, { method: 'GET', read: 'json', check: isAutomation }, options),
    update: (id, params, options = {}) =>
      send(
        path(id),
        {},
        { method: 'PATCH', body: JSON.stringify(params), read: 'json', check: isAutomation },
        options,
      ),
    remove: (id, options = {}) => send<void>(path(id), {}, { method: 'DELETE', read: 'none' }, options),
    runs: (id, params = {}, options = {}) =>
      send(
        `${path(id)}/runs`,
        { state: params.state, page: params.page, limit: params.limit },
        { method: 'GET', read: 'json', check: isList(isRun) },
        options,
      ),
  };
}

/** `POST /events/track`: a custom event of a contact. */
export interface TrackEventParams {
  /** Address of an existing contact. */
  email: string;
  /** 1..100 of `A-Z a-z 0-9 _ . : -`, not starting with `email.`, `contact.` or `domain.`. */
  name: string;
  data?: Record<string, unknown>;
}

export interface TrackedEvent {
  id: string;
  name: string;
  contactId: string;
}

export const isTrackedEvent = (value: unknown): value is TrackedEvent =>
  isRecord(value) && typeof value.id === 'string' && typeof value.contactId === 'string';
