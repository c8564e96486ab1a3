import { retentionCutoff } from '@tern/domain';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { boundProject, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { queryMemoValidatorCompiler } from '../query-memo.js';
import { createReadMemo } from '../read-memo.js';
import { resourceErrors } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { AS_OF_HEADER, errors } from '../schemas.js';
import { decodeLogsCursor, encodeLogsCursor } from './cursor.js';
import { logsQuerySchema, logsResponseSchema } from './schemas.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** What the plugin uses (built by `apiRoutes`). */
export type LogsRouteDeps = Pick<ApiRouteDeps, 'logQueries' | 'now' | 'readModel' | 'retentionDays'>;

/** `GET /emails/logs` (SPEC §7, §19): the caller's tenant only, newest first, never an expired entry. */
export const logsRoutes: FastifyPluginAsyncZod<LogsRouteDeps> = async (app, deps) => {
  // Pages memoised on the tenant's logs version (`read-context.ts`): ≤ 8 MiB of answers.
  const pages = createReadMemo<Buffer>({ maxEntries: 5000, maxBytes: 8 * 2 ** 20, sizeOf: (b) => b.length });
  app.get(
    '/emails/logs',
    {
      config: { auth: 'jwt_or_key', scope: 'email:read' },
      // A repeated query is validated once (`query-memo.ts`).
      validatorCompiler: queryMemoValidatorCompiler(),
      schema: {
        tags: [TAGS.logs],
        operationId: 'getEmailLogs',
        summary: 'Delivery log',
        description:
          'One page of the tenant’s emails, newest first (`createdAt` desc, then `id` desc). `provider` and ' +
          '`messageId` are null until the email is sent. Entries older than the tenant’s retention are never ' +
          'listed. A page past the end has `data: []`. Filters `status`, `from`/`to`, `tag`, `q`, `templateId` and `projectId` ' +
          'combine (AND); `meta.total` counts the matching entries exactly. `meta.nextCursor` opens the next page ' +
          'at constant cost, whatever its depth. A key bound to a project sees that project only. API key with ' +
          'scope `email:read`, or a dashboard JWT.\n\n' +
          'Example: `GET /emails/logs?status=delivered&tag=receipt&q=ada%40&limit=50`, then the same query with ' +
          '`&cursor=` and the answer’s `meta.nextCursor`, until `nextCursor` is null.',
        security: KEY_OR_DASHBOARD,
        querystring: logsQuerySchema,
        response: {
          200: logsResponseSchema,
          400: errors.badRequest('querystring.limit: limit must be an integer from 1 to 100'),
          ...resourceErrors('log'),
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const { tenantId } = credential;
      const { page, limit, status, from, to, tag, q, templateId } = request.query;
      // A project-bound key sees its project only: another project's filter finds nothing.
      const bound = boundProject(credential);
      const projectId = bound ?? request.query.projectId;
      const empty =
        bound !== null && request.query.projectId !== undefined && request.query.projectId !== bound;
      const at = deps.now();
      const context = await deps.readModel.get(tenantId);
      if (context.asOf !== null) reply.header(AS_OF_HEADER, context.asOf.toISOString());
      const cutoff = retentionCutoff(at, context.retentionOverride ?? deps.retentionDays);
      // Memoised as the bytes sent: a repeated page costs neither a query nor a serialisation.
      const key =
        context.logsVersion === null
          ? ''
          : JSON.stringify([
              tenantId,
              cutoff.getTime(),
              empty,
              projectId ?? null,
              page,
              limit,
              request.query.cursor ?? null,
              status ?? null,
              from ?? null,
              to ?? null,
              tag ?? null,
              q ?? null,
              templateId ?? null,
            ]);
      // Only answers to valid queries are memoised: a known key needs no further check.
      const known = pages.peek(key, context.logsVersion);
      if (known !== undefined) return reply.type(JSON_TYPE).send(known);
      let cursor = null;
      if (request.query.cursor !== undefined) {
        cursor = decodeLogsCursor(request.query.cursor);
        if (cursor === null)
          throw httpError(400, 'querystring.cursor: cursor is not one of meta.nextCursor', {
            code: 'INVALID_CURSOR',
          });
      }
      const answer = async () => {
        const result = empty
          ? { entries: [], total: 0, next: null, page: cursor?.page ?? page }
          : await deps.logQueries.page({
              tenantId,
              cutoff,
              limit,
              page,
              cursor,
              filter: { status, from, to, tag, q, projectId, templateId },
            });
        return {
          data: result.entries,
          meta: {
            page: result.page,
            limit,
            total: result.total,
            totalPages: Math.ceil(result.total / limit),
            nextCursor: result.next ? encodeLogsCursor(result.next) : null,
          },
        };
      };
      if (context.logsVersion === null) return answer();
      const body = await pages.get(key, context.logsVersion, async () =>
        Buffer.from(reply.serialize(await answer()) as string),
      );
      return reply.type(JSON_TYPE).send(body);
    },
  );
};
