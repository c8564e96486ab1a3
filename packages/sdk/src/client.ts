import { type AnalyticsApi, createAnalyticsApi } from './analytics.js';
import {
  type ContactPropertiesApi,
  createContactPropertiesApi,
  createSegmentsApi,
  createTopicsApi,
  type SegmentsApi,
  type TopicsApi,
} from './audiences.js';
import { type AutomationsApi, createAutomationsApi } from './automations.js';
import { type CampaignsApi, createCampaignsApi } from './campaigns.js';
import { type ResolvedConfig, readProcessEnv, resolveConfig, type TernOptions } from './config.js';
import { ITERATOR_PAGE_LIMIT } from './constants.js';
import { type ContactsApi, createContactsApi } from './contacts.js';
import { createEmailsApi, type EmailsApi } from './emails.js';
import { createEventsApi, type EventsApi } from './events.js';
import { createInboundApi, type InboundApi } from './inbound.js';
import { createSequencesApi, type SequencesApi } from './sequences.js';
import { type ClientDeps, createSend, defaultDeps } from './transport.js';
import type {
  EmailLogEntry,
  GetLogsParams,
  IterateLogsParams,
  LogsResponse,
  RequestOptions,
} from './types.js';
import { createWebhooksApi, type WebhooksApi } from './webhooks.js';

export interface TernClient {
  /** The resolved API origin (and path prefix), without a trailing slash. */
  readonly baseUrl: string;
  /** One page of `GET /emails/logs`, newest first, exactly as the endpoint returns it. */
  getLogs(params?: GetLogsParams, options?: RequestOptions): Promise<LogsResponse>;
  /**
   * Every log entry, newest first, walking pages 1..totalPages. Entries that move to a later page
   * while iterating (new emails arrive on top) are yielded once: ids already seen are skipped.
   */
  logs(params?: IterateLogsParams, options?: RequestOptions): AsyncGenerator<EmailLogEntry, void, undefined>;
  /** Contacts and audiences (`contacts:read` / `contacts:write`). */
  readonly contacts: ContactsApi;
  /** Typed contact properties (SPEC §27; `contacts:read` / `contacts:write`). */
  readonly contactProperties: ContactPropertiesApi;
  /** Segments: filters over contacts (SPEC §27; `contacts:read` / `contacts:write`). */
  readonly segments: SegmentsApi;
  /** Topics contacts opt in to or out of (SPEC §27; `contacts:read` / `contacts:write`). */
  readonly topics: TopicsApi;
  /** Outgoing webhook endpoints, their deliveries and replays (key scope `webhooks:manage`). */
  readonly webhooks: WebhooksApi;
  /** Campaigns (`campaigns:read` / `campaigns:write`). */
  readonly campaigns: CampaignsApi;
  /** Sequences and enrollments (`sequences:read` / `sequences:write`). */
  readonly sequences: SequencesApi;
  /** Automations and their runs (`automations:read` / `automations:write`). */
  readonly automations: AutomationsApi;
  /** Sending (SPEC §11); needs a key with `email:send` (send, batch) or `email:read` (get, cancel). */
  readonly emails: EmailsApi;
  /** Breakdowns and deliverability (SPEC §26; key scope `analytics:read`). */
  readonly analytics: AnalyticsApi;
  /** The event stream (SPEC §25): `list({ after })` and `for await (const e of stream({ after }))` (`events:read`). */
  readonly events: EventsApi;
  /** Received mail (SPEC §24): list, get, raw MIME and attachments (`inbound:read`). */
  readonly inbound: InboundApi;
}

/**
 * Create a client. `apiKey` falls back to `TERN_API_KEY`, `baseUrl` to `TERN_BASE_URL`, then
 * `http://127.0.0.1:3000`. Throws `TernConfigError` at once when no key is found.
 */
export function init(options: TernOptions = {}): TernClient {
  return createTernClient(resolveConfig(options, readProcessEnv()), defaultDeps);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function isLogsResponse(value: unknown): value is LogsResponse {
  return (
    isRecord(value) &&
    Array.isArray(value.data) &&
    isRecord(value.meta) &&
    typeof value.meta.page === 'number' &&
    typeof value.meta.limit === 'number' &&
    typeof value.meta.total === 'number' &&
    typeof value.meta.totalPages === 'number'
  );
}

export function createTernClient(config: ResolvedConfig, deps: ClientDeps): TernClient {
  const send = createSend(config, deps);

  function getLogs(params: GetLogsParams = {}, options: RequestOptions = {}): Promise<LogsResponse> {
    return send(
      '/emails/logs',
      { page: params.page, limit: params.limit },
      { method: 'GET', read: 'json', check: isLogsResponse },
      options,
    );
  }

  async function* logs(
    params: IterateLogsParams = {},
    options: RequestOptions = {},
  ): AsyncGenerator<EmailLogEntry, void, undefined> {
    const limit = params.limit ?? ITERATOR_PAGE_LIMIT;
    const seen = new Set<string>();
    for (let page = 1; ; page++) {
      const { data, meta } = await getLogs({ page, limit }, options);
      for (const entry of data) {
        if (seen.has(entry.id)) continue;
        seen.add(entry.id);
        yield entry;
      }
      // totalPages is re-read on every page, so entries added meanwhile extend the walk.
      if (data.length === 0 || page >= meta.totalPages) return;
    }
  }

  return {
    baseUrl: config.baseUrl,
    getLogs,
    logs,
    contacts: createContactsApi(send),
    contactProperties: createContactPropertiesApi(send),
    segments: createSegmentsApi(send),
    topics: createTopicsApi(send),
    emails: createEmailsApi(send, deps),
    events: createEventsApi(send, config, deps),
    inbound: createInboundApi(send),
    webhooks: createWebhooksApi(send),
    campaigns: createCampaignsApi(send),
    sequences: createSequencesApi(send),
    automations: createAutomationsApi(send),
    analytics: createAnalyticsApi(send),
  };
}
