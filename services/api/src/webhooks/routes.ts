import {
  createWebhookBodySchema,
  listMeta,
  listResponseSchema,
  updateWebhookBodySchema,
  webhookSchema,
  webhookWithSecretSchema,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import { checkWebhookUrl, generateWebhookSecret } from '@tern/webhooks';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { boundProject, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { deleteRoute, newResourceId, notFound, pageQuerySchema, pageWindow } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import { deliveryRoutes } from './delivery-routes.js';
import type { WebhookRouteOptions } from './options.js';
import { common, manage, notFoundErrors, params, withNotFound } from './route-common.js';

/** What the webhook routes need beyond the shared deps; the runtime passes it from the config. */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3_600_000;

/**
 * Webhook endpoints are tenant-wide: each receives every project's events, and its deliveries
 * show them. A key bound to a project reads and sends only within it (SPEC §16), so it may not
 * manage them (like `POST /projects`): 403 on every `/webhooks*` route.
 */
export const PROJECT_KEY_WEBHOOKS_MESSAGE =
  "This API key is bound to a project: webhooks are tenant-wide (they receive every project's events); use a key without a project or a dashboard session";

/** `/webhooks*` (SPEC §17). Registered by `apiRoutes` when the runtime configured webhooks. */
export const webhookRoutes: FastifyPluginAsyncZod<
  Pick<ApiRouteDeps, 'eventStreamDays' | 'now' | 'pool' | 'readModel' | 'retentionDays' | 'webhookStore'> & {
    webhooks: WebhookRouteOptions;
  }
> = async (app, deps) => {
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
      const webhook = await deps.webhookStore.insertEndpoint(
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
      const { data, total } = await deps.webhookStore.listEndpoints(tenantId, pageWindow(request.query));
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
      const webhook = await deps.webhookStore.getEndpoint(tenantId, request.params.id);
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
      const webhook = await deps.webhookStore.updateEndpoint(
        tenantId,
        request.params.id,
        request.body,
        deps.now(),
      );
      if (!webhook) throw notFound('Webhook');
      request.log.info({ webhookId: webhook.id, enabled: webhook.enabled }, 'webhook changed');
      return webhook;
    },
  );

  deleteRoute(app, '/webhooks/:id', {
    config: manage,
    tag: TAGS.webhooks,
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook endpoint',
    description: 'Deletes the endpoint and its delivery records; pending retries stop.',
    What: 'Webhook',
    params,
    errors: notFoundErrors,
    remove: async (tenantId, id, request) => {
      if (!(await deps.webhookStore.deleteEndpoint(tenantId, id))) return false;
      request.log.info({ webhookId: id }, 'webhook deleted');
      return true;
    },
  });

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
      const webhook = await deps.webhookStore.rotateSecret(
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

  deliveryRoutes(app, deps);
};
