import { randomBase62 } from '@tern/auth';
import {
  createWebhookBodySchema,
  listMeta,
  listResponseSchema,
  replayWebhookBodySchema,
  updateWebhookBodySchema,
  webhookDeliverySchema,
  webhookDeliveryStatusSchema,
  webhookReplaySchema,
  webhookSchema,
  webhookWithSecretSchema,
} from '@tern/contracts';
import { retentionCutoff } from '@tern/domain';
import { httpError } from '@tern/http';
import { checkWebhookUrl, generateWebhookSecret } from '@tern/webhooks';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { type AuthConfig, boundProject, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  newResourceId,
  notFound,
  pageQuerySchema,
  pageWindow,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse, errors, noContentSchema } from '../schemas.js';
import type { WebhookRouteOptions } from './options.js';
import {
  deleteEndpoint,
  getEndpoint,
  insertEndpoint,
  insertReplay,
  listDeliveries,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from './store.js';

/** What the webhook routes need beyond the shared deps; the runtime passes it from the config. */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3_600_000;

/** SPEC §17: an API key needs `webhooks:manage`; a tenant JWT of any role passes (SPEC part two). */
const manage: AuthConfig = { auth: 'jwt_or_key', scope: 'webhooks:manage' };

const params = resourceIdParam('webhook', 'wh_7Gq2vN9xKp4sLm3Tz8Rb1Wc5');

/**
 * Webhook endpoints are tenant-wide: each receives every project's events, and its deliveries
 * show them. A key bound to a project reads and sends only within it (SPEC §16), so it may not
 * manage them (like `POST /projects`): 403 on every `/webhooks*` route.
 */
export const PROJECT_KEY_WEBHOOKS_MESSAGE =
  "This API key is bound to a project: webhooks are tenant-wide (they receive every project's events); use a key without a project or a dashboard session";

const forbidden = errorResponse(
  403,
  'The API key lacks `webhooks:manage` (`missingScope`), or is bound to a project (webhooks are tenant-wide).',
  'Missing required API key scope',
  { code: 'MISSING_SCOPE', missingScope: 'webhooks:manage' },
);
const common = resourceErrors('Webhook', { forbidden });
const withNotFound = resourceErrors('Webhook', { notFound: 'webhook endpoint', forbidden });

const deliveriesQuerySchema = pageQuerySchema.extend({
  status: webhookDeliveryStatusSchema.optional().meta({ description: 'Only deliveries in this state.' }),
});

/** `/webhooks*` (SPEC §17). Registered by `apiRoutes` when the runtime configured webhooks. */
export const webhookRoutes: FastifyPluginAsyncZod<ApiRouteDeps & { webhooks: WebhookRouteOptions }> = async (
  app,
  deps,
) => {
  const { secretBox, urlPolicy } = deps.webhooks;

  // After the auth hook of `apiRoutes` (parent hooks run first): the credential is known here.
  app.addHook('onRequest', async (request) => {
    if (request.credential !== null && boundProject(request.credential) !== null) {
      throw httpError(403, PROJECT_KEY_WEBHOOKS_MESSAGE, { code: 'FORBIDDEN' });
    }
  });
  const overlapMs = deps.webhooks.rotationOverlapMs ?? DEFAULT_ROTATION_OVERLAP_MS;

  async function assertUrl(url: string): Promise<void> {
    const problem = await checkWebhookUrl(url, urlPolicy);
    if (problem !== null) throw httpError(400, `body.url: ${problem}`, { code: 'FST_ERR_VALIDATION' });
  }

  app.post(
    '/webhooks',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'createWebhook',
        summary: 'Create a webhook endpoint',
        description:
          'Registers a URL that receives signed deliveries (Standard Webhooks) of the chosen event types. ' +
          'The `secret` is in this answer only; Tern keeps it encrypted.',
        security: KEY_OR_DASHBOARD,
        body: createWebhookBodySchema,
        response: {
          201: webhookWithSecretSchema,
          400: errors.badRequest('body.url: url must start with https://'),
          ...common,
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const { url, events, description } = request.body;
      await assertUrl(url);
      const secret = generateWebhookSecret();
      const webhook = await insertEndpoint(
        deps.pool,
        tenantId,
        {
          id: newResourceId('webhook'),
          url,
          events: events ?? null,
          description: description ?? null,
          secretEnc: secretBox.encrypt(secret),
        },
        deps.now(),
      );
      request.log.info({ webhookId: webhook.id }, 'webhook created');
      return reply.status(201).send({ ...webhook, secret });
    },
  );

  app.get(
    '/webhooks',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'listWebhooks',
        summary: 'List webhook endpoints',
        description: 'Newest first. Secrets are never listed.',
        security: KEY_OR_DASHBOARD,
        querystring: pageQuerySchema,
        response: {
          200: listResponseSchema(webhookSchema).meta({
            description: 'One page of endpoints.',
            examples: [{ data: webhookSchema.meta()?.examples ?? [], meta: listMeta(1, 20, 1) }],
          }),
          400: errors.badRequest('querystring.limit: limit must be an integer from 1 to 100'),
          ...common,
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const { data, total } = await listEndpoints(deps.pool, tenantId, pageWindow(request.query));
      return { data, meta: listMeta(request.query.page, request.query.limit, total) };
    },
  );

  app.get(
    '/webhooks/:id',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'getWebhook',
        summary: 'Get a webhook endpoint',
        description: 'The endpoint without its secret (shown only by create and rotate-secret).',
        security: KEY_OR_DASHBOARD,
        params,
        response: { 200: webhookSchema, ...withNotFound },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const webhook = await getEndpoint(deps.pool, tenantId, request.params.id);
      if (!webhook) throw notFound('Webhook');
      return webhook;
    },
  );

  app.patch(
    '/webhooks/:id',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'updateWebhook',
        summary: 'Change a webhook endpoint',
        description:
          'Changes `url`, `events`, `description` or `enabled`. `enabled: true` re-enables an endpoint Tern ' +
          'disabled after 5 days of failures (events of the disabled period can be sent again with replay).',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateWebhookBodySchema,
        response: {
          200: webhookSchema,
          400: errors.badRequest('body.enabled: enabled must be a boolean'),
          ...withNotFound,
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      if (request.body.url !== undefined) await assertUrl(request.body.url);
      const webhook = await updateEndpoint(deps.pool, tenantId, request.params.id, request.body, deps.now());
      if (!webhook) throw notFound('Webhook');
      request.log.info({ webhookId: webhook.id, enabled: webhook.enabled }, 'webhook changed');
      return webhook;
    },
  );

  app.delete(
    '/webhooks/:id',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint and its delivery records; pending retries stop.',
        security: KEY_OR_DASHBOARD,
        params,
        response: { 204: noContentSchema, ...withNotFound },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      if (!(await deleteEndpoint(deps.pool, tenantId, request.params.id))) throw notFound('Webhook');
      request.log.info({ webhookId: request.params.id }, 'webhook deleted');
      return reply.status(204).send();
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate the signing secret',
        description:
          'Returns a new secret. For 24 h the old one keeps signing too: `webhook-signature` carries both ' +
          'signatures (space-separated), so receivers can switch without losing a delivery.',
        security: KEY_OR_DASHBOARD,
        params,
        response: { 200: webhookWithSecretSchema, ...withNotFound },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const secret = generateWebhookSecret();
      const webhook = await rotateSecret(
        deps.pool,
        tenantId,
        request.params.id,
        secretBox.encrypt(secret),
        deps.now(),
        overlapMs,
      );
      if (!webhook) throw notFound('Webhook');
      request.log.info({ webhookId: webhook.id }, 'webhook secret rotated');
      return { ...webhook, secret };
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'listWebhookDeliveries',
        summary: 'Deliveries of a webhook endpoint',
        description:
          'Newest first, each with its attempts (status code, duration, error, first 1 KiB of the answer). ' +
          'Filter with `status`.',
        security: KEY_OR_DASHBOARD,
        params,
        querystring: deliveriesQuerySchema,
        response: {
          200: listResponseSchema(webhookDeliverySchema).meta({
            description: 'One page of deliveries.',
            examples: [{ data: webhookDeliverySchema.meta()?.examples ?? [], meta: listMeta(1, 20, 1) }],
          }),
          400: errors.badRequest('querystring.status: status must be one of pending, delivered, failed'),
          ...withNotFound,
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      if (!(await getEndpoint(deps.pool, tenantId, request.params.id))) throw notFound('Webhook');
      const { page, limit, status } = request.query;
      const { data, total } = await listDeliveries(deps.pool, tenantId, request.params.id, {
        ...pageWindow({ page, limit }),
        status,
      });
      return { data, meta: listMeta(page, limit, total) };
    },
  );

  app.post(
    '/webhooks/:id/replay',
    {
      config: manage,
      schema: {
        tags: [TAGS.webhooks],
        operationId: 'replayWebhook',
        summary: 'Deliver past events again',
        description:
          'Re-reads the event log and delivers to this endpoint every event of the tenant with `occurredAt` in ' +
          '[`since`, `until`) (default until now) that its filter matches, with the original `webhook-id`s. ' +
          'Runs in the background (202). Expired events are not delivered again: a `since` before the tenant’s ' +
          'retention cut-off starts at the cut-off (the answer says so), an `until` at or before it → 400.',
        security: KEY_OR_DASHBOARD,
        params,
        body: replayWebhookBodySchema,
        response: {
          202: webhookReplaySchema,
          400: errors.badRequest('body.since: since must be an ISO 8601 timestamp with a zone'),
          ...withNotFound,
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const now = deps.now();
      const since = new Date(request.body.since);
      const until = request.body.until ? new Date(request.body.until) : now;
      if (since.getTime() >= until.getTime()) {
        throw httpError(400, 'body.since: since must be before until', { code: 'FST_ERR_VALIDATION' });
      }
      // SPEC §9: what retention expired is gone for every reader, a replayed webhook included.
      const { retentionOverride } = await deps.readModel.get(tenantId);
      const cutoff = retentionCutoff(now, retentionOverride ?? deps.retentionDays);
      if (until.getTime() <= cutoff.getTime()) {
        throw httpError(
          400,
          `body.until: the window ends before the retention cut-off (${cutoff.toISOString()}): its events have expired`,
          { code: 'FST_ERR_VALIDATION' },
        );
      }
      if (!(await getEndpoint(deps.pool, tenantId, request.params.id))) throw notFound('Webhook');
      const replay = await insertReplay(
        deps.pool,
        tenantId,
        {
          id: `rpl_${randomBase62(24)}`,
          endpointId: request.params.id,
          since: since < cutoff ? cutoff : since,
          until,
        },
        now,
      );
      request.log.info({ webhookId: request.params.id, replayId: replay.id }, 'webhook replay requested');
      return reply.status(202).send(replay);
    },
  );
};
