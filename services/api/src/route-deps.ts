import type { EventStream } from '@tern/event-log';
import type { AnalyticsQueries, BreakdownQueries } from '@tern/read-models';
import type { AttachmentKeyring } from '@tern/sending';
import type { ApiKeyStore } from '@tern/tenant-settings';
import type pg from 'pg';
import type { DomainPolicy, FromDomainCheck } from './domains/policy.js';
import type { ContentBudget } from './emails/content-budget.js';
import type { ReadContexts } from './read-context.js';
import type { ApiStores } from './stores.js';
import type { WebhookRouteOptions } from './webhooks/options.js';

/**
 * Everything `apiRoutes` builds once for its route plugins. No plugin takes all of it: each
 * declares the few fields it uses, its own `<Name>RouteDeps` (e.g. `{ templates: TemplateStore;
 * now: () => Date }`). The repositories (`ApiStores`) are their owners' factories over `pool`; the
 * routes of those resources never use `pool` itself.
 */
export interface ApiRouteDeps extends ApiStores {
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
  /** Limits and timers of the SSE tails (`events/tail.ts`); defaults when absent. */
  eventTail?: EventTailOptions | undefined;
}

/** The SSE tails' limits and timers (SPEC §25). */
export interface EventTailOptions {
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
