import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { SCOPES } from '@tern/contracts';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { AuthConfig } from './credentials.js';

export const TAGS = {
  analytics: 'Analytics',
  logs: 'Logs',
  apiKeys: 'API keys',
  settings: 'Tenant settings',
  webhooks: 'Webhooks',
  templates: 'Templates',
  suppressions: 'Suppressions',
  projects: 'Projects',
  contacts: 'Contacts',
  unsubscribe: 'Unsubscribe',
  campaigns: 'Campaigns',
  sequences: 'Sequences',
  automations: 'Automations',
  emails: 'Emails',
  tracking: 'Tracking',
  domains: 'Domains',
  providers: 'Provider notifications',
  mcp: 'MCP',
  inbound: 'Inbound',
  events: 'Events',
} as const;

export const DOCS_PREFIX = '/docs';

/** OpenAPI extension on every authenticated operation: who may call it, in words (from the route's `config`). */
export const CREDENTIAL_EXTENSION = 'x-tern-credential';

/** The credential rule of a route config, as `docs/api.md` and `/docs` show it. */
export function describeCredential(config: AuthConfig): string | null {
  if (config.auth === undefined) return config.publicCredential ?? null;
  const roles = config.roles === undefined ? 'any role' : `role ${config.roles.join(' or ')}`;
  const tenant = config.tenantParam === undefined ? '' : ` of the tenant in \`:${config.tenantParam}\``;
  if (config.auth === 'jwt') return `Dashboard JWT${tenant} (${roles}); API keys get 403.`;
  if (config.denyKeys)
    return `Dashboard JWT (${roles}); every API key gets 403 \`Missing required API key scope\`.`;
  if (config.scope === undefined)
    return `Any API key, or a dashboard JWT (${roles}); each call is then checked as its own route.`;
  return `API key with \`${config.scope}\`, or a dashboard JWT (${roles}).`;
}

type Transform = ReturnType<typeof createJsonSchemaTransform>;

/** Adds `x-tern-credential` to each documented operation, from the route's auth config. */
function withCredentialDoc(transform: Transform): Transform {
  return (input) => {
    const out = transform(input);
    const text = describeCredential((input.route.config ?? {}) as AuthConfig);
    if (text === null) return out;
    return { ...out, schema: { ...out.schema, [CREDENTIAL_EXTENSION]: text } as typeof out.schema };
  };
}

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
  /** Where this server is reached (PUBLIC_URL); the document's `servers`. Default Tern's default listen URL. */
  serverUrl?: string;
  /** The process also serves `POST /events` (ingest): its tag and security scheme are declared. */
  ingest?: boolean;
}

/** The URL `servers` names when no PUBLIC_URL is known: where `npm start` listens by default. */
export const DEFAULT_SERVER_URL = 'http://127.0.0.1:3000';

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
      servers: [
        {
          url: (opts.serverUrl ?? DEFAULT_SERVER_URL).replace(/\/+$/, ''),
          description: 'This Tern (PUBLIC_URL)',
        },
      ],
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
          name: TAGS.emails,
          description:
            'Send, batch, schedule and cancel emails; an email’s timeline and sandbox content (SPEC §11).',
        },
        {
          name: TAGS.settings,
          description: 'Per-tenant settings such as retention (dashboard JWT, owner or admin).',
        },
        {
          name: TAGS.templates,
          description:
            'Mustache templates (read: `templates:read` or any dashboard JWT; write: dashboard JWT, owner or admin).',
        },
        {
          name: TAGS.suppressions,
          description: 'Addresses never sent to (`suppressions:read`, `suppressions:write`).',
        },
        {
          name: TAGS.projects,
          description: 'Groups of emails; keys may be bound to one (`projects:read`, `projects:write`).',
        },
        {
          name: TAGS.contacts,
          description:
            'Contacts and audiences, CSV import and export (API key with `contacts:read` / `contacts:write`, or dashboard JWT).',
        },
        {
          name: TAGS.unsubscribe,
          description:
            'The links of `List-Unsubscribe` (RFC 8058): one-click `POST` and a confirmation page. No credential: the signed token is one.',
        },
        {
          name: TAGS.campaigns,
          description:
            'One message to every subscribed contact of an audience, sent exactly once per contact (`campaigns:read`, `campaigns:write`).',
        },
        {
          name: TAGS.sequences,
          description:
            'Drip sequences: steps sent at enrollment + the delays, stopped by unsubscribe, suppression, erasure or cancel (`sequences:read`, `sequences:write`).',
        },
        {
          name: TAGS.automations,
          description:
            'Flows a trigger event starts per contact: delays, sends, waits for an event, conditions and property updates, each step exactly once; stopped by unsubscribe, suppression or erasure (`automations:read`, `automations:write`; `POST /events/track`: `events:write`).',
        },
        {
          name: TAGS.domains,
          description:
            'Sending domains: the DNS records that verify them, DKIM signing of their mail (read: `email:send` or any dashboard JWT; write: dashboard JWT, owner or admin).',
        },
        {
          name: TAGS.inbound,
          description:
            'Received mail (SPEC §24): the messages the MX listener stored, their raw MIME and attachments (`inbound:read`), routes (`inbound:manage`).',
        },
        {
          name: TAGS.tracking,
          description:
            'The open pixel and click redirect the sender puts in HTML mail (SPEC §11). No credential: the signed token is one.',
        },
        {
          name: TAGS.events,
          description:
            'The tenant’s events after a cursor, listed or tailed live with Server-Sent Events (`events:read`).',
        },
        {
          name: TAGS.mcp,
          description:
            'The Model Context Protocol server for agents (SPEC §28): tools over the routes above, each gated by its route’s scope (docs/mcp.md).',
        },
        ...(opts.ingest
          ? [{ name: 'Ingest', description: 'Delivery events of the sending pipeline (ingest token).' }]
          : []),
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
          ...(opts.ingest
            ? {
                ingestToken: {
                  type: 'http' as const,
                  scheme: 'bearer',
                  description:
                    'The ingest token of the sending pipeline (INGEST_TOKEN), on `POST /events` only.',
                },
              }
            : {}),
        },
      },
    },
    transform: withCredentialDoc(
      createJsonSchemaTransform({
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
    ),
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: DOCS_PREFIX });
}
