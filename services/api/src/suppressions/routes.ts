import { addSuppressionBodySchema, suppressionSchema } from '@tern/contracts';
import { createSuppressionStore, type SuppressionStore } from '@tern/read-models';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AuthConfig, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  defineResource,
  listAnswer,
  listResponses,
  notFound,
  pageQuerySchema,
  resourceErrors,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors, noContentSchema } from '../schemas.js';

const read: AuthConfig = { auth: 'jwt_or_key', scope: 'suppressions:read' };
const write: AuthConfig = { auth: 'jwt_or_key', scope: 'suppressions:write' };

const EXAMPLE = {
  email: 'ada@example.com',
  reason: 'hard_bounce',
  source: 'bounce',
  createdAt: '2026-06-15T12:00:00.000Z',
};

/** What the plugin uses (built by `apiRoutes`). */
export type SuppressionRouteDeps = Pick<ApiRouteDeps, 'now'> & { suppressions: SuppressionStore };

/** `/suppressions` (SPEC §13). */
export const suppressionRoutes: FastifyPluginAsyncZod<SuppressionRouteDeps> = async (app, deps) => {
  app.get(
    '/suppressions',
    {
      config: read,
      schema: {
        tags: [TAGS.suppressions],
        operationId: 'listSuppressions',
        summary: 'List suppressions',
        description: 'Newest first. Entries come from you (`manual`) or from hard bounces and complaints.',
        security: KEY_OR_DASHBOARD,
        querystring: pageQuerySchema,
        response: listResponses(suppressionSchema, {
          what: 'suppression',
          description: 'One page of suppressed addresses.',
          examples: [EXAMPLE],
          badRequest: 'querystring.page: page must be an integer ≥ 1',
        }),
      },
    },
    async (request) => {
      const { items, total } = await deps.suppressions.list(credentialOf(request).tenantId, request.query);
      return listAnswer(items, request.query, total);
    },
  );

  app.post(
    '/suppressions',
    {
      config: write,
      schema: {
        tags: [TAGS.suppressions],
        operationId: 'addSuppression',
        summary: 'Suppress an address',
        description:
          'Lowercases the address. 201 when added; 200 with the existing entry, unchanged, when it was already ' +
          'suppressed.',
        security: KEY_OR_DASHBOARD,
        body: addSuppressionBodySchema,
        response: {
          201: suppressionSchema.meta({
            description: 'Added.',
            examples: [
              {
                email: 'ada@example.com',
                reason: 'asked by phone',
                source: 'manual',
                createdAt: '2026-06-15T12:00:00.000Z',
              },
            ],
          }),
          200: suppressionSchema.meta({
            description: 'Already suppressed: the existing entry.',
            examples: [EXAMPLE],
          }),
          400: errors.badRequest('body.email: email must be an email address'),
          ...resourceErrors('suppression'),
        },
      },
    },
    async (request, reply) => {
      const { email, reason } = request.body;
      const { created, suppression } = await deps.suppressions.add(
        credentialOf(request).tenantId,
        { email, reason: reason ?? null, source: 'manual' },
        deps.now(),
      );
      return reply.status(created ? 201 : 200).send(suppression);
    },
  );

  app.delete(
    '/suppressions/:email',
    {
      config: write,
      schema: {
        tags: [TAGS.suppressions],
        operationId: 'removeSuppression',
        summary: 'Unsuppress an address',
        description: 'Any case (URL-encoded). The address may be sent to again.',
        security: KEY_OR_DASHBOARD,
        params: z.object({
          email: z
            .string()
            .min(1)
            .max(320)
            .meta({ description: 'The suppressed address.', example: 'ada@example.com' }),
        }),
        response: {
          204: noContentSchema.meta({ description: 'Removed.' }),
          ...resourceErrors('Suppression', { notFound: true }),
        },
      },
    },
    async (request, reply) => {
      if (!(await deps.suppressions.remove(credentialOf(request).tenantId, request.params.email))) {
        throw notFound('Suppression');
      }
      return reply.status(204).send();
    },
  );
};

/** `suppressions` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const suppressionsResource = defineResource(
  { suppressions: createSuppressionStore },
  suppressionRoutes,
);
