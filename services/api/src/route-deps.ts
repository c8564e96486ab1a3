import type pg from 'pg';
import type { AnalyticsQueries } from './analytics-queries.js';
import type { ApiKeyStore } from './api-key-store.js';
import type { WebhookRouteOptions } from './webhooks/routes.js';

/** What the route plugins of the query API share; built once by `apiRoutes`. */
export interface ApiRouteDeps {
  pool: pg.Pool;
  analytics: AnalyticsQueries;
  keys: ApiKeyStore;
  /** Business clock. */
  now: () => Date;
  /** Server default retention (RETENTION_DAYS); a tenant may override it. */
  retentionDays: number;
  /** Secret sealing and URL policy of `/webhooks*`; the routes exist only when it is given. */
  webhooks?: WebhookRouteOptions | undefined;
}
