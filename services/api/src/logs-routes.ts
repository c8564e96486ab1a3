import { retentionCutoff } from '@tern/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { boundProject, credentialOf } from './credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from './openapi.js';
import { logsPage, tenantReadContext } from './pg-queries.js';
import type { ApiRouteDeps } from './route-deps.js';
import { AS_OF_HEADER, errors, logsQuerySchema, logsResponseSchema } from './schemas.js';

/** `GET /emails/logs` (SPEC §7): the caller's tenant only, newest first, never an expired entry. */
export const logsRoutes: FastifyPluginAsyncZod<ApiRouteDeps> = async (app, deps) => {
  app.get(
    '/emails/logs',
    {
      config: { auth: 'jwt_or_key', scope: 'email:read' },
      schema: {
        tags: [TAGS.logs],
        operationId: 'getEmailLogs',
        summary: 'Delivery log',
        description:
          'One page of the tenant’s emails, newest first (`createdAt` desc, then `id` desc). `provider` and ' +
          '`messageId` are null until the email is sent. Entries older than the tenant’s retention are never ' +
          'listed. A page past the end has `data: []`. `projectId` narrows to one project; a key bound to a ' +
          'project sees that project only. API key with scope `email:read`, or a dashboard JWT.',
        security: KEY_OR_DASHBOARD,
        querystring: logsQuerySchema,
        response: {
          200: logsResponseSchema,
          400: errors.badRequest('querystring.limit: limit must be an integer from 1 to 100'),
          401: errors.unauthorized,
          403: errors.forbiddenScope,
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const { tenantId } = credential;
      const { page, limit } = request.query;
      // A project-bound key sees its project only: another project's filter finds nothing.
      const bound = boundProject(credential);
      const projectId = bound ?? request.query.projectId ?? null;
      const empty =
        bound !== null && request.query.projectId !== undefined && request.query.projectId !== bound;
      const at = deps.now();
      const context = await tenantReadContext(deps.pool, tenantId);
      if (context.asOf !== null) reply.header(AS_OF_HEADER, context.asOf.toISOString());
      const cutoff = retentionCutoff(at, context.retentionOverride ?? deps.retentionDays);
      const { entries, total } = empty
        ? { entries: [], total: 0 }
        : await logsPage(deps.pool, { tenantId, cutoff, page, limit, projectId });
      return { data: entries, meta: { page, limit, total, totalPages: Math.ceil(total / limit) } };
    },
  );
};
