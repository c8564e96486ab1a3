// What other workspaces (the runtime, benches) and this service's tests use of the api: named,
// so a module's every export is not public by accident (issue 25, item 4).

export { type ApiKeyStore, createApiKeyStore, insertProject } from '@tern/tenant-settings';
export { cohortDays } from './analytics/routes.js';
export { analyticsQuerySchema } from './analytics/schemas.js';
export type {
  ApiData,
  ApiDeps,
  ApiFeatures,
  ApiHttpOptions,
  ApiLimits,
  ApiPolicy,
  SendingAppDeps,
} from './api-options.js';
export {
  buildReferenceApp,
  INGEST_EXAMPLE,
  type OpenApiDocument,
  REFERENCE_SENDGRID_KEY,
  referenceDocument,
  renderApiReference,
} from './api-reference.js';
export { apiRoutes, DEFAULT_KEY_CACHE_TTL_MS, DEFAULT_LAST_USED_FLUSH_MS } from './api-routes.js';
export { createApiApp, createSendingApp, fastifyTrustProxy } from './app.js';
export {
  JWT_REQUIRED_MESSAGE,
  PROJECT_KEY_TENANT_WIDE_MESSAGE,
  TENANT_WIDE_WRITE_SCOPES,
} from './credentials.js';
export type { DomainPolicy } from './domains/policy.js';
export { type ContentBudget, createContentBudget } from './emails/content-budget.js';
export { logsQuerySchema } from './logs/schemas.js';
export { createTernMcpServer, MCP_SERVER_INFO } from './mcp/server.js';
export { type McpStdioOptions, serveMcpStdio } from './mcp/stdio.js';
export { TERN_TOOLS, type TernTool } from './mcp/tools.js';
export { CREDENTIAL_EXTENSION } from './openapi.js';
export type { ProviderRouteOptions } from './providers/routes.js';
export { newResourceId } from './resource-kit.js';
export type { ApiStores } from './stores.js';
export { type SubmissionServer, startSubmissionServer } from './submission/server.js';
export { devTlsPair, selfSignedPair, type TlsPair } from './submission/tls.js';
export type { WebhookRouteOptions } from './webhooks/options.js';
export { PROJECT_KEY_WEBHOOKS_MESSAGE } from './webhooks/routes.js';
