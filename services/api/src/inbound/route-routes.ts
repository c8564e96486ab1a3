import { httpError } from '@tern/http';
import {
  type CreateRouteBody,
  createRouteBodySchema,
  deleteRoute,
  insertRoute,
  listRoutes,
  updateRoute,
} from '@tern/inbound';
import { getEndpoint } from '@tern/webhooks';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { z } from 'zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { newResourceId, notFound, resourceErrors } from '../resource-kit.js';
import { errors, noContentSchema } from '../schemas.js';

const read: AuthConfig = { auth: 'jwt_or_key', scope: 'inbound:read' };
const manage: AuthConfig = { auth: 'jwt_or_key', scope: 'inbound:manage' };

export const routeSchema = z.object({
  id: z.string(),
  priority: z.number(),
  match: z.object({ recipient: z.string(), from: z.string().optional(), subject: z.string().optional() }),
  actions: z.array(z.record(z.string(), z.unknown())),
  createdAt: z.string(),
});
const ROUTE_EXAMPLE = {
  id: 'rt_01jd2k3m4n5p6q7r8s9t0v1w2x',
  priority: 10,
  match: { recipient: '*@acme.in.tern.example.net' },
  actions: [{ webhook: 'we_01jd2k3m4n5p6q7r8s9t0v1w2x' }, { store: true }],
  createdAt: '2026-06-15T12:00:00.000Z',
};

/** `/inbound/routes` (SPEC §24): what happens to received mail; the first match by priority acts. */
export const inboundRouteRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool }> = async (app, { pool }) => {
  /** A webhook action must name an endpoint of the tenant. */
  async function checkWebhooks(tenantId: string, body: CreateRouteBody): Promise<void> {
    for (const action of body.actions) {
      if ('webhook' in action && (await getEndpoint(pool, tenantId, action.webhook)) === null)
        throw httpError(400, `body.actions: webhook ${action.webhook} is no endpoint of this tenant`, {
          code: 'BAD_REQUEST',
        });
    }
  }

  app.post(
    '/inbound/routes',
    {
      config: manage,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'createInboundRoute',
        summary: 'Add an inbound route',
        description:
          '`match.recipient` (and optional `from`, `subject`): an exact address, `*@domain` or `/regex/`. The first ' +
          'matching route by `priority` (lowest first) acts: `{ webhook: endpointId }` announces the message to that ' +
          'endpoint only, `{ store: true }` keeps it announced to nobody, `{ drop: true }` accepts and discards it. ' +
          '`{ forward: address }` re-sends the message to that address (only that one) as an email of the tenant: ' +
          'From the receiving address (or `forwarding@` a verified domain), Reply-To the original sender, counted and ' +
          'logged like any send. No route matches → stored and announced to every endpoint subscribed to `email.received`.',
        security: KEY_OR_DASHBOARD,
        body: createRouteBodySchema.meta({
          examples: [
            {
              match: { recipient: '*@acme.in.tern.example.net' },
              priority: 10,
              actions: [{ webhook: 'we_01jd2k3m4n5p6q7r8s9t0v1w2x' }, { store: true }],
            },
          ],
        }),
        response: {
          201: routeSchema.meta({ description: 'The route.', examples: [ROUTE_EXAMPLE] }),
          400: errors.badRequest('body.actions: webhook we_x is no endpoint of this tenant'),
          ...resourceErrors('inbound route'),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      await checkWebhooks(tenantId, request.body);
      const route = await insertRoute(pool, tenantId, newResourceId('inboundRoute'), request.body);
      return reply.status(201).send(route);
    },
  );

  app.get(
    '/inbound/routes',
    {
      config: read,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'listInboundRoutes',
        summary: 'List inbound routes',
        description: 'In the order they are tried: priority, then age.',
        security: KEY_OR_DASHBOARD,
        response: {
          200: z
            .object({ data: z.array(routeSchema) })
            .meta({ description: 'The routes, by priority.', examples: [{ data: [ROUTE_EXAMPLE] }] }),
          ...resourceErrors('inbound route'),
        },
      },
    },
    async (request) => ({ data: await listRoutes(pool, credentialOf(request).tenantId) }),
  );

  app.put(
    '/inbound/routes/:id',
    {
      config: manage,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'replaceInboundRoute',
        summary: 'Change an inbound route',
        description:
          'Replaces the route’s `match`, `priority` and `actions` (the body of `POST /inbound/routes`); its id and ' +
          'age (the tie-break between equal priorities) stay. Mail received from then on is routed by it.',
        security: KEY_OR_DASHBOARD,
        params: z.object({ id: z.string().max(64) }),
        body: createRouteBodySchema.meta({
          examples: [
            { match: { recipient: '*@acme.in.tern.example.net' }, priority: 5, actions: [{ drop: true }] },
          ],
        }),
        response: {
          200: routeSchema.meta({ description: 'The route as changed.', examples: [ROUTE_EXAMPLE] }),
          400: errors.badRequest('body.actions: webhook we_x is no endpoint of this tenant'),
          ...resourceErrors('Inbound route', { notFound: true }),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      await checkWebhooks(tenantId, request.body);
      const route = await updateRoute(pool, tenantId, request.params.id, request.body);
      if (!route) throw notFound('Inbound route');
      return route;
    },
  );

  app.delete(
    '/inbound/routes/:id',
    {
      config: manage,
      schema: {
        tags: [TAGS.inbound],
        operationId: 'deleteInboundRoute',
        summary: 'Delete an inbound route',
        security: KEY_OR_DASHBOARD,
        params: z.object({ id: z.string().max(64) }),
        response: {
          204: noContentSchema.meta({ description: 'Deleted.' }),
          ...resourceErrors('Inbound route', { notFound: true }),
        },
      },
    },
    async (request, reply) => {
      if (!(await deleteRoute(pool, credentialOf(request).tenantId, request.params.id)))
        throw notFound('Inbound route');
      return reply.status(204).send();
    },
  );
};
