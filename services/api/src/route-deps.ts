import type { EventStream } from '@tern/event-log';
import type pg from 'pg';
import type { AnalyticsQueries } from './analytics/queries.js';
import type { ApiKeyStore } from './api-keys/store.js';
import type { DomainPolicy } from './domains/policy.js';
import type { ReadContexts } from './read-context.js';
import type { WebhookRouteOptions } from './webhooks/options.js';

/** What the route plugins of the query API share; built once by `apiRoutes`. */
export interface ApiRouteDeps {
  pool: pg.Pool;
  analytics: AnalyticsQueries;
  keys: ApiKeyStore;
  /** Business clock. */
  now: () => Date;
  /** Server default retention (RETENTION_DAYS); a tenant may override it. */
  retentionDays: number;
  /** Server default send rate per tenant (SEND_RATE_PER_SECOND, SPEC §23); 0 = unlimited. */
  sendRatePerSecond: number;
  /** A tenant's retention, freshness and memo versions; told of the changes routes commit. */
  readModel: ReadContexts;
  /** Secret sealing and URL policy of `/webhooks*`; the routes exist only when it is given. */
  webhooks?: WebhookRouteOptions | undefined;
  /** Whether a send's From domain must be verified (SPEC §20); absent → any domain. */
  domainPolicy?: DomainPolicy | undefined;
}

/**
 * What sending and tracking need (SPEC §11); without it those routes are not mounted. The tracking
 * routes also need the one TRACKING_SECRET of `apiRoutes` (the key of unsubscribe tokens too).
 */
export interface SendingDeps {
  /** The event log the sends, cancels and tracking events are appended to. */
  log: EventStream;
}
