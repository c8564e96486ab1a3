import { randomBase62 } from '@tern/auth';
import {
  listMeta,
  listResponseSchema,
  replayWebhookBodySchema,
  webhookDeliverySchema,
  webhookDeliveryStatusSchema,
  webhookReplaySchema,
} from '@tern/contracts';
import { retentionCutoff } from '@tern/domain';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { notFound, pageQuerySchema, pageWindow } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import { manage, params, withNotFound } from './route-common.js';

const deliveriesQuerySchema = pageQuerySchema.extend({
  status: webhookDeliveryStatusSchema.optional().meta({ description: 'Only deliveries in this state.' }),
});

/**
 * `GET /webhooks/:id/deliveries` and `POST /webhooks/:id/replay`: registered by `webhookRoutes` on its
 * own instance, so its hooks (the project-bound key refusal) apply to them too.
 */
export function deliveryRoutes(app: Parameters<FastifyPluginAsyncZod>[0], deps: ApiRouteDeps): void {
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
      if (!(await deps.webhookStore.getEndpoint(tenantId, request.params.id))) throw notFound('Webhook');
      const { page, limit, status } = request.query;
      const { data, total } = await deps.webhookStore.listDeliveries(tenantId, request.params.id, {
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
      if (!(await deps.webhookStore.getEndpoint(tenantId, request.params.id))) throw notFound('Webhook');
      const replay = await deps.webhookStore.insertReplay(
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
}
