import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { SCOPES } from '@tern/contracts';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

export const TAGS = {
  analytics: 'Analytics',
  logs: 'Logs',
  apiKeys: 'API keys',
  settings: 'Tenant settings',
  webhooks: 'Webhooks',
} as const;

export const DOCS_PREFIX = '/docs';

/** OpenAPI security requirements of the routes (alternatives: any one of them). */
type SecurityRequirements = Array<Record<string, string[]>>;
export const DASHBOARD_ONLY: SecurityRequirements = [{ dashboardJwt: [] }];
export const KEY_OR_DASHBOARD: SecurityRequirements = [
  { apiKey: [] },
  { apiKeyHeader: [] },
  { dashboardJwt: [] },
];

export interface ApiDocsOptions {
  /** Shown in the document (`info.version`). */
  version?: string;
  /** Extra description, e.g. for the all-in-one process that also serves ingest. */
  description?: string;
}

const DESCRIPTION = `Query side of Tern: delivery logs, analytics, API keys.

**Credentials.** A dashboard session is a JWT (\`Authorization: Bearer <jwt>\`, claims \`tenantId\`, \`role\`, \`exp\`).
An API key (\`tern_…\`) goes in \`Authorization: Bearer <key>\` or \`X-API-Key: <key>\`. The server tells them apart by
their form. Scopes: ${SCOPES.map((s) => `\`${s}\``).join(', ')}.

**Errors.** Every 4xx/5xx body is \`{ statusCode, error, message }\`, sometimes with \`code\`; a key lacking a scope gets
403 \`Missing required API key scope\` with \`missingScope\`.

**Freshness.** Analytics and logs responses carry \`X-Tern-As-Of\`: when the projector last committed a batch.`;

/**
 * `@fastify/swagger` (OpenAPI from the zod route schemas) and the browsable UI at `/docs`, the
 * document at `/docs/json`. Register it before the routes: swagger collects them as they are added.
 */
export async function registerApiDocs(app: FastifyInstance, opts: ApiDocsOptions = {}): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tern API',
        version: opts.version ?? '0.1.0',
        description: opts.description ? `${DESCRIPTION}\n\n${opts.description}` : DESCRIPTION,
      },
      tags: [
        {
          name: TAGS.analytics,
          description: 'Totals, rates, daily buckets and top templates (dashboard JWT).',
        },
        { name: TAGS.logs, description: 'The delivery log (API key with `email:read`, or dashboard JWT).' },
        {
          name: TAGS.apiKeys,
          description: 'Create, list and revoke API keys (dashboard JWT, owner or admin).',
        },
        {
          name: TAGS.webhooks,
          description:
            'Outgoing webhook endpoints, their deliveries and replays (API key with `webhooks:manage`, or dashboard JWT).',
        },
        {
          name: TAGS.settings,
          description: 'Per-tenant settings such as retention (dashboard JWT, owner or admin).',
        },
      ],
      components: {
        securitySchemes: {
          dashboardJwt: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'Dashboard session: a JWT with `tenantId`, `role` (owner|admin|member) and `exp`.',
          },
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'tern_…',
            description: 'API key in the Authorization header.',
          },
          apiKeyHeader: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Key',
            description: 'API key in the X-API-Key header.',
          },
        },
      },
    },
    transform: createJsonSchemaTransform({
      skipList: [
        DOCS_PREFIX,
        `${DOCS_PREFIX}/`,
        `${DOCS_PREFIX}/json`,
        `${DOCS_PREFIX}/yaml`,
        `${DOCS_PREFIX}/uiConfig`,
        `${DOCS_PREFIX}/initOAuth`,
        `${DOCS_PREFIX}/*`,
        `${DOCS_PREFIX}/static/*`,
        '/health',
        '/ready',
      ],
    }),
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: DOCS_PREFIX });
}
