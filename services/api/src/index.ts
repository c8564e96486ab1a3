export {
  type LogsFilter,
  type LogsPageQuery,
  type LogsPageResult,
  logsPage,
  logsStatement,
} from '@tern/read-models';
export * from './analytics-queries.js';
export * from './analytics-routes.js';
export * from './api-key-store.js';
export * from './api-reference.js';
export * from './api-routes.js';
export * from './app.js';
export * from './bulk/mail.js';
export * from './bulk/outgoing-mailer.js';
export * from './bulk/stats.js';
export * from './campaigns/fanout.js';
export * from './campaigns/routes.js';
export * from './campaigns/store.js';
export * from './compat/resend.js';
export * from './contacts/erase.js';
export * from './contacts/erase-routes.js';
export * from './contacts/routes.js';
export * from './contacts/store.js';
export * from './credentials.js';
export * from './domains/policy.js';
export * from './domains/routes.js';
export * from './logs-routes.js';
export * from './openapi.js';
export * from './pg-queries.js';
export * from './projects/routes.js';
export * from './projects/store.js';
export * from './providers/notices.js';
export * from './providers/routes.js';
export * from './providers/sns.js';
export * from './resource-kit.js';
export * from './retention-job.js';
export * from './route-deps.js';
export * from './schemas.js';
export * from './sequences/routes.js';
export * from './sequences/scheduler.js';
export * from './sequences/store.js';
export * from './submission/message.js';
export * from './submission/server.js';
export * from './submission/tls.js';
export * from './suppressions/routes.js';
export * from './suppressions/store.js';
export * from './templates/routes.js';
export * from './templates/store.js';
export * from './tenant-routes.js';
export * from './unsubscribe/routes.js';
export * from './webhooks/routes.js';
export * as webhookStore from './webhooks/store.js';
