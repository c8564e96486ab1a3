import type { ContactStore, UnsubscribeStore } from '@tern/bulk';
import type { EventStream } from '@tern/event-log';
import type { AnalyticsQueries, BreakdownQueries, LogQueries } from '@tern/read-models';
import type { AttachmentKeyring, EmailStore, IdempotencyStore } from '@tern/sending';
import type { ApiKeyStore, TenantSettingsStore } from '@tern/tenant-settings';
import type { WebhookStore } from '@tern/webhooks';
import type pg from 'pg';
import type { DomainPolicy, FromDomainCheck } from './domains/policy.js';
import type { ContentBudget } from './emails/content-budget.js';
import type { ReadContexts } from './read-context.js';
import type { WebhookRouteOptions } from './webhooks/options.js';

/**
 * The repositories beside the tenant resources' (`ResourceStores`, from `RESOURCES`): what several
 * plugins share, or what a plugin with its own options mounts.
 */
export interface CoreStores {
  /** Endpoints, deliveries and replays (SPEC §17); `webhooks` is the routes' sealing and URL policy. */
  webhookStore: WebhookStore;
  /** Sent emails: detail, sandbox content, cancel, reschedule (SPEC §11, §22). */
  emails: EmailStore;
  /** Idempotency-Key claims of the sends (SPEC §11). */
  idempotency: IdempotencyStore;
  unsubscribes: UnsubscribeStore;
  /** Contacts and audiences (SPEC §14; `@tern/bulk`). */
  contacts: ContactStore;
  /** A tenant's retention, tracking and send rate (`/tenants/:id/settings`). */
  tenantSettings: TenantSettingsStore;
  /** The email log's reads outside a tenant resource: `GET /logs` pages, provider notices' message ids. */
  logQueries: LogQueries;
}

/**
 * Everything `apiRoutes` builds once for its route plugins. No plugin takes all of it: each
 * declares the few fields it uses, its own `<Name>RouteDeps` (e.g. `{ templates: TemplateStore;
 * now: () => Date }`). The repositories (`CoreStores`, and each resource's under its name) are their owners' factories over `pool`; the
 * routes of those resources never use `pool` itself.
 */
export interface ApiRouteDeps extends CoreStores {
  /**
   * For what runs its own transaction across owners: a send's `enqueueSends`, an erasure.
   */
  pool: pg.Pool;
  analytics: AnalyticsQueries;
  /** The sliceable rollup's reads (SPEC §26). */
  breakdown: BreakdownQueries;
  keys: ApiKeyStore;
  /** Business clock. */
  now: () => Date;
  /** Server default retention (RETENTION_DAYS); a tenant may override it. */
  retentionDays: number;
  /** Server default send rate per tenant (SEND_RATE_PER_SECOND, SPEC §23); 0 = unlimited. */
  sendRatePerSecond: number;
  /** The most a tenant's send rate may be (SEND_RATE_MAX_PER_SECOND, issue 40 item 9); 0 = no ceiling. */
  sendRateMaxPerSecond: number;
  /** A tenant's retention, freshness and memo versions; told of the changes routes commit. */
  readModel: ReadContexts;
  /** Secret sealing and URL policy of `/webhooks*`; the routes exist only when it is given. */
  webhooks?: WebhookRouteOptions | undefined;
  /** Whether a send's From domain must be verified (SPEC §20); absent → any domain. */
  domainPolicy?: DomainPolicy | undefined;
  /** `domainPolicy` applied to a send's From addresses, over the pool. */
  fromDomains: FromDomainCheck;
  /** EVENT_STREAM_DAYS (SPEC §25): how long the event stream keeps events (and cursors stay valid). */
  eventStreamDays: number;
  /** Limits and timers of the event stream's routes (`events/`); defaults when absent. */
  eventStream?: EventStreamOptions | undefined;
}

/** The event stream's limits and timers (SPEC §25): its page cache and its SSE tails. */
export interface EventStreamOptions {
  /** Bytes of pages one process keeps (EVENT_PAGE_CACHE_MB; `page-cache.ts`), 0: none. Default 32 MiB. */
  pageCacheBytes?: number;
  maxStreams?: number;
  maxStreamsPerTenant?: number;
  heartbeatMs?: number;
  tickMs?: number;
  pollMs?: number;
}

/**
 * What sending and tracking need (SPEC §11); without it those routes are not mounted. The tracking
 * routes also need the one TRACKING_SECRET of `apiRoutes` (the key of unsubscribe tokens too).
 */
export interface SendingDeps {
  /** The event log the sends, cancels and tracking events are appended to. */
  log: EventStream;
  /** Seals attachment bytes (SPEC §22); without it a send with attachments → 503. */
  keyring?: AttachmentKeyring | undefined;
  /** Bytes of content in flight in the send routes (issue 40 item 8); default `DEFAULT_CONTENT_BUDGET`. */
  contentBudget?: ContentBudget | undefined;
}
