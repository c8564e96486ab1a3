import { randomBase62 } from '@tern/auth';
import {
  listMeta,
  listResponseSchema,
  replayWebhookBodySchema,
  WEBHOOK_EVENT_TYPES,
  type WebhookReplay,
  webhookDeliverySchema,
  webhookDeliveryStatusSchema,
  webhookReplaySchema,
} from '@tern/contracts';
import { retentionCutoff } from '@tern/domain';
import { httpError } from '@tern/http';
import { eventsReplayRange, parseEventCursor } from '@tern/read-models';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialOf } from '../credentials.js';
import { cursorExpired, cursorGone, eventStreamCutoff } from '../events/cutoff.js';
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
export function deliveryRoutes(
  app: Parameters<FastifyPluginAsyncZod>[0],
  deps: Pick<
    ApiRouteDeps,
    'eventStreamDays' | 'now' | 'pool' | 'readModel' | 'retentionDays' | 'webhookStore'
  >,
): void {
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
          'Delivers past events to this endpoint again, with their original `webhook-id`s, signed as usual; ' +
          'runs in the background (202). Either a time window — `{ since, until? }`: re-reads the event log, ' +
          'every event of the tenant with `occurredAt` in [`since`, `until`) (default until now) that the ' +
          'endpoint’s filter matches; a `since` before the tenant’s retention cut-off starts at the cut-off (the ' +
          'answer says so), an `until` at or before it → 400 — or a cursor of the event stream (SPEC §25) — ' +
          '`{ after }`: every event of `GET /events` after it that the filter matches, in stream order, up to ' +
          'the stream’s head when asked (`through`), at most 10 000 per replay (`hasMore`: replay again with ' +
          '`after` = `through`). A cursor past retention → 410 `CURSOR_EXPIRED`; one beyond the head → 400. ' +
          'Asking again for the same cursor while its replay is unfinished answers that replay (nothing twice).',
        security: KEY_OR_DASHBOARD,
        params,
        body: replayWebhookBodySchema,
        response: {
          202: webhookReplaySchema,
          400: errors.badRequest('body.since: since must be an ISO 8601 timestamp with a zone'),
          ...withNotFound,
          410: cursorGone,
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const now = deps.now();
      if (request.body.after !== undefined) {
        const replay = await replayAfter(tenantId, request.params.id, request.body.after);
        request.log.info(
          { webhookId: replay.webhookId, replayId: replay.id, after: replay.after, through: replay.through },
          'webhook replay from a cursor requested',
        );
        return reply.status(202).send(replay);
      }
      const since = new Date(request.body.since ?? 0);
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

  /**
   * A replay from a cursor of the event stream (SPEC §25): the range is fixed now — after the cursor,
   * through the stream's head or the 10 000th event the endpoint's filter matches — and the
   * dispatcher enqueues it from the stream.
   */
  async function replayAfter(tenantId: string, endpointId: string, cursor: string): Promise<WebhookReplay> {
    const after = parseEventCursor(cursor);
    if (after === null)
      throw httpError(400, 'body.after: after must be a cursor', { code: 'FST_ERR_VALIDATION' });
    const endpoint = await deps.webhookStore.getEndpoint(tenantId, endpointId);
    if (!endpoint) throw notFound('Webhook');
    const range = await eventsReplayRange(deps.pool, {
      tenantId,
      after,
      cutoff: await eventStreamCutoff(deps, tenantId),
      // No filter: every webhook event type — not the stream's custom events, which no webhook carries.
      types: endpoint.events ?? WEBHOOK_EVENT_TYPES,
    });
    if (range.kind === 'expired') throw cursorExpired();
    if (range.kind === 'ahead')
      throw httpError(
        400,
        `body.after: no event has this cursor yet (the stream's last cursor is ${range.head})`,
        { code: 'FST_ERR_VALIDATION' },
      );
    return deps.webhookStore.insertCursorReplay(
      tenantId,
      {
        id: `rpl_${randomBase62(24)}`,
        endpointId: endpoint.id,
        after,
        through: BigInt(range.through),
        hasMore: range.hasMore,
      },
      deps.now(),
    );
  }
}
