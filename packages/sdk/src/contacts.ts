import type { AudienceList, Contact, ContactList, ErasureResult, ImportResult } from '@tern/contracts/wire';
import { getJson, isRecord, json, resourceCalls } from './resource.js';
import type { Send } from './transport.js';
import type { ListMeta, RequestOptions } from './types.js';

export type {
  Audience,
  AudienceList,
  Contact,
  ContactList,
  ErasureResult,
  ImportResult as ImportContactsResult,
} from '@tern/contracts/wire';

export interface CreateContactParams {
  email: string;
  firstName?: string | null;
  lastName?: string | null;
  attributes?: Record<string, string | number | boolean | null>;
  /** Default true. */
  subscribed?: boolean;
  audiences?: string[];
  /** Values of defined contact properties, each of its type; null removes one. Merged on update. */
  properties?: Record<string, string | number | boolean | null>;
  /** Topic choices by topic id; null returns one to the topic's default. Merged on update. */
  topics?: Record<string, 'opt_in' | 'opt_out' | null>;
}

/** Fields to change; `attributes` and `audiences` replace the whole value, `properties` and `topics` merge. */
export type UpdateContactParams = Partial<CreateContactParams>;

export interface ListContactsParams {
  page?: number;
  limit?: number;
  /** Only the contacts of this audience. */
  audience?: string;
}

export interface ContactsApi {
  create(params: CreateContactParams, options?: RequestOptions): Promise<Contact>;
  list(params?: ListContactsParams, options?: RequestOptions): Promise<ContactList>;
  get(id: string, options?: RequestOptions): Promise<Contact>;
  update(id: string, params: UpdateContactParams, options?: RequestOptions): Promise<Contact>;
  remove(id: string, options?: RequestOptions): Promise<void>;
  /** Upserts the contacts of a CSV text (upsert on the address); `audience` joins each to it. */
  importCsv(csv: string, params?: { audience?: string }, options?: RequestOptions): Promise<ImportResult>;
  /** The tenant's contacts (or one audience's) as CSV text. */
  exportCsv(params?: { audience?: string }, options?: RequestOptions): Promise<string>;
  /** The audiences with their counts; `name` reads one. */
  audiences(
    params?: { page?: number; limit?: number; name?: string },
    options?: RequestOptions,
  ): Promise<AudienceList>;
  /**
   * Erases every personal datum of the address in the tenant (`POST /contacts/erase`,
   * `contacts:write`): contact, log entries' recipient/subject/content, sandbox messages, webhook
   * records; counts and analytics stay, the address stays suppressed as a keyed hash. Idempotent.
   */
  erase(email: string, options?: RequestOptions): Promise<ErasureResult>;
}

const isContact = (value: unknown): value is Contact =>
  isRecord(value) && typeof value.id === 'string' && typeof value.email === 'string';
const isList = (value: unknown): value is { data: unknown[]; meta: ListMeta } =>
  isRecord(value) &&
  Array.isArray(value.data) &&
  isRecord(value.meta) &&
  typeof value.meta.total === 'number';
const isContactList = (value: unknown): value is ContactList => isList(value) && value.data.every(isContact);
const isAudienceList = (value: unknown): value is AudienceList =>
  isList(value) && value.data.every((a) => isRecord(a) && typeof a.name === 'string');
const isImportResult = (value: unknown): value is ImportResult =>
  isRecord(value) && typeof value.rows === 'number' && Array.isArray(value.errors);

const isErasureResult = (value: unknown): value is ErasureResult =>
  isRecord(value) && value.erased === true && isRecord(value.counts);

export function createContactsApi(send: Send): ContactsApi {
  return {
    ...resourceCalls(send, '/contacts', isContact, isContactList),
    list: ({ page, limit, audience } = {}, options = {}) =>
      getJson(send, '/contacts', { page, limit, audience }, isContactList, options),
    importCsv: (csv, params = {}, options = {}) =>
      send(
        '/contacts/import',
        { audience: params.audience },
        { method: 'POST', body: csv, contentType: 'text/csv', read: 'json', check: isImportResult },
        options,
      ),
    exportCsv: (params = {}, options = {}) =>
      send<string>(
        '/contacts/export',
        { audience: params.audience },
        { method: 'GET', read: 'text' },
        options,
      ),
    audiences: ({ page, limit, name } = {}, options = {}) =>
      getJson(send, '/audiences', { page, limit, name }, isAudienceList, options),
    erase: (email, options = {}) =>
      send('/contacts/erase', {}, { ...json('POST', { email }), check: isErasureResult }, options),
  };
}
