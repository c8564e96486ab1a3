import type { Role, Scope } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { ApiKeyRecord, ProjectStore } from '@tern/tenant-settings';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  apiKeyListSchema,
  apiKeyParamsSchema,
  createApiKeyBodySchema,
  createdApiKeySchema,
} from './api-keys/schemas.js';
import type { AuthConfig } from './credentials.js';
import { DASHBOARD_ONLY, TAGS } from './openapi.js';
import type { ApiRouteDeps } from './route-deps.js';
import { errors, noContentSchema, tenantParamsSchema } from './schemas.js';
import { tenantSettingsResponseSchema, tenantSettingsSchema } from './settings/schemas.js';

const TENANT_ADMINS: readonly Role[] = ['owner', 'admin'];

/** Dashboard JWT of the tenant in `:id`, with role owner or admin (SPEC §8). */
const tenantAdmin: AuthConfig = { auth: 'jwt', tenantParam: 'id', roles: TENANT_ADMINS };
/** Dashboard JWT of the tenant in `:id`, any role: members read the settings admins change. */
const tenantMember: AuthConfig = { auth: 'jwt', tenantParam: 'id' };

const adminErrors = {
  401: errors.unauthorized,
  403: errors.forbiddenKind,
};

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

const metadata = (r: ApiKeyRecord) => ({
  id: r.id,
  name: r.name,
  scopes: r.scopes as Scope[],
  prefix: r.prefix,
  createdAt: r.createdAt.toISOString(),
  lastUsedAt: iso(r.lastUsedAt),
  expiresAt: iso(r.expiresAt),
  revokedAt: iso(r.revokedAt),
  projectId: r.projectId,
});

/** What the plugin uses (built by `apiRoutes`). */
export type TenantRouteDeps = Pick<
  ApiRouteDeps,
  | 'keys'
  | 'now'
  | 'readModel'
  | 'retentionDays'
  | 'sendRateMaxPerSecond'
  | 'sendRatePerSecond'
  | 'tenantSettings'
> & { projects: ProjectStore };

/** `/tenants/:id/api-keys` (SPEC §8) and `/tenants/:id/settings` (SPEC §9 retention override). */
export const tenantRoutes: FastifyPluginAsyncZod<TenantRouteDeps> = async (app, deps) => {
  const settingsOf = async (tenantId: string) => ({
    retentionDays: await deps.tenantSettings.getRetention(tenantId),
    defaultRetentionDays: deps.retentionDays,
    tracking: await deps.tenantSettings.getTracking(tenantId),
    sendRatePerSecond: await deps.tenantSettings.getSendRate(tenantId),
    defaultSendRatePerSecond: deps.sendRatePerSecond,
    timeZone: await deps.tenantSettings.getTimeZone(tenantId),
  });

  app.post(
    '/tenants/:id/api-keys',
    {
      config: tenantAdmin,
      schema: {
        tags: [TAGS.apiKeys],
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description:
          'Creates a key with the given scopes. The clear key is in this response only: Tern stores its ' +
          'SHA-256 and its first characters (`prefix`).',
        security: DASHBOARD_ONLY,
        params: tenantParamsSchema,
        body: createApiKeyBodySchema,
        response: {
          201: createdApiKeySchema,
          400: errors.badRequest('body.scopes: scopes must contain at least one scope'),
          ...adminErrors,
        },
      },
    },
    async (request, reply) => {
      const { name, scopes, expiresAt, projectId } = request.body;
      const expires = expiresAt == null ? null : new Date(expiresAt);
      if (expires !== null && expires.getTime() <= deps.now().getTime()) {
        throw httpError(400, 'body.expiresAt: expiresAt must be in the future', {
          code: 'FST_ERR_VALIDATION',
        });
      }
      if (projectId != null && (await deps.projects.get(request.params.id, projectId)) === null) {
        throw httpError(400, 'body.projectId: projectId must be the id of one of the tenant’s projects', {
          code: 'FST_ERR_VALIDATION',
        });
      }
      const { record, key } = await deps.keys.create(request.params.id, {
        name,
        scopes,
        expiresAt: expires,
        projectId: projectId ?? null,
      });
      request.log.info({ keyId: record.id, scopes }, 'api key created');
      return reply.status(201).send({
        id: record.id,
        name: record.name,
        scopes: record.scopes as Scope[],
        key,
        createdAt: record.createdAt.toISOString(),
        expiresAt: iso(record.expiresAt),
        projectId: record.projectId,
      });
    },
  );

  app.get(
    '/tenants/:id/api-keys',
    {
      config: tenantAdmin,
      schema: {
        tags: [TAGS.apiKeys],
        operationId: 'listApiKeys',
        summary: 'List API keys',
        description: 'Metadata of every key of the tenant, revoked ones included, newest first.',
        security: DASHBOARD_ONLY,
        params: tenantParamsSchema,
        response: { 200: apiKeyListSchema, ...adminErrors },
      },
    },
    async (request) => ({ data: (await deps.keys.list(request.params.id)).map(metadata) }),
  );

  app.delete(
    '/tenants/:id/api-keys/:keyId',
    {
      config: tenantAdmin,
      schema: {
        tags: [TAGS.apiKeys],
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description:
          'The key is refused (401) at once by the instance that revoked it and within 5 s by every other one. ' +
          'Revoking a revoked key is a no-op (204).',
        security: DASHBOARD_ONLY,
        params: apiKeyParamsSchema,
        response: { 204: noContentSchema, ...adminErrors, 404: errors.notFound },
      },
    },
    async (request, reply) => {
      const { id, keyId } = request.params;
      if (!(await deps.keys.revoke(id, keyId)))
        throw httpError(404, 'API key not found', { code: 'NOT_FOUND' });
      request.log.info({ revokedKeyId: keyId }, 'api key revoked');
      return reply.status(204).send();
    },
  );

  app.get(
    '/tenants/:id/settings',
    {
      config: tenantMember,
      schema: {
        tags: [TAGS.settings],
        operationId: 'getTenantSettings',
        summary: 'Get tenant settings',
        description:
          'Any role of the tenant reads them (only an owner or admin changes them). A tenant that never ' +
          'changed its settings has the defaults (`retentionDays: null`: `defaultRetentionDays` applies).',
        security: DASHBOARD_ONLY,
        params: tenantParamsSchema,
        response: { 200: tenantSettingsResponseSchema, ...adminErrors },
      },
    },
    async (request) => settingsOf(request.params.id),
  );

  app.put(
    '/tenants/:id/settings',
    {
      config: tenantAdmin,
      schema: {
        tags: [TAGS.settings],
        operationId: 'putTenantSettings',
        summary: 'Change tenant settings',
        description:
          'Sets the retention override (1..3650 days, or null for the server default), open and click ' +
          'tracking and/or the send rate (emails per second handed to the provider, or null for the server default). A shorter retention hides older logs and analytics at once; the retention job deletes them ' +
          'later. Fields left out keep their value.',
        security: DASHBOARD_ONLY,
        params: tenantParamsSchema,
        body: tenantSettingsSchema,
        response: {
          200: tenantSettingsResponseSchema,
          400: errors.badRequest(
            'body.retentionDays: retentionDays must be an integer from 1 to 3650, or null',
          ),
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const { retentionDays, tracking, sendRatePerSecond, timeZone } = request.body;
      const tenantId = request.params.id;
      // Checked before any write: a refused body changes nothing.
      const ceiling = deps.sendRateMaxPerSecond;
      if (sendRatePerSecond != null && ceiling > 0 && sendRatePerSecond > ceiling)
        throw httpError(
          400,
          `body.sendRatePerSecond: sendRatePerSecond must be at most ${ceiling}, the server's ceiling (SEND_RATE_MAX_PER_SECOND): a tenant may only lower it`,
          { code: 'FST_ERR_VALIDATION' },
        );
      if (retentionDays !== undefined) {
        await deps.tenantSettings.setRetention(tenantId, retentionDays, deps.now());
        deps.readModel.changed({ kind: 'settings', tenants: [tenantId] });
        request.log.info({ retentionDays }, 'tenant retention changed');
      }
      if (tracking !== undefined) {
        await deps.tenantSettings.setTracking(tenantId, tracking, deps.now());
        request.log.info({ tracking }, 'tenant tracking changed');
      }
      if (sendRatePerSecond !== undefined) {
        await deps.tenantSettings.setSendRate(tenantId, sendRatePerSecond, deps.now());
        request.log.info({ sendRatePerSecond }, 'tenant send rate changed');
      }
      if (timeZone !== undefined) {
        await deps.tenantSettings.setTimeZone(tenantId, timeZone, deps.now());
        request.log.info({ timeZone }, 'tenant time zone changed');
      }
      return settingsOf(tenantId);
    },
  );
};
