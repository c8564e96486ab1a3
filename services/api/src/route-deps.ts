import type { EventLog } from '@tern/event-log';
import type { RenderTemplate } from '@tern/sender';
import type pg from 'pg';
import type { AnalyticsQueries } from './analytics-queries.js';
import type { ApiKeyStore } from './api-key-store.js';

/** What the route plugins of the query API share; built once by `apiRoutes`. */
export interface ApiRouteDeps {
  pool: pg.Pool;
  analytics: AnalyticsQueries;
  keys: ApiKeyStore;
  /** Business clock. */
  now: () => Date;
  /** Server default retention (RETENTION_DAYS); a tenant may override it. */
  retentionDays: number;
}

/** What sending and tracking need (SPEC §11); without it those routes are not mounted. */
export interface SendingDeps {
  /** The event log the sends and tracking events are appended to. */
  log: EventLog;
  /** TRACKING_SECRET: verifies the tokens of `/t/o/:token` and `/t/c/:token`. */
  trackingSecret: string;
  /** Renders the queued subject of template sends (the sender renders the bodies). */
  renderTemplate: RenderTemplate;
}
