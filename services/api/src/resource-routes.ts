import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { type AuthConfig, credentialOf } from './credentials.js';
import { KEY_OR_DASHBOARD } from './openapi.js';
import {
  listAnswer,
  listResponses,
  notFound,
  type PageQuery,
  pageQuerySchema,
  resourceErrors,
  type resourceIdParam,
} from './resource-kit.js';

/**
 * The CRUD route blocks every tenant resource repeats, declared once: `GET /<resource>` (one page,
 * newest first) and `GET /<resource>/:id` (one, or the 404 that hides other tenants'). A resource's
 * routes file names what differs — path, tag, operation id, words, schema — and the repository
 * call; the schema, status codes and credential rule are the same as a hand-written block's.
 */

type App = Parameters<FastifyPluginAsyncZod>[0];

/** What the OpenAPI document says of one route. */
interface RouteDoc {
  /** Credential rule (`credentials.ts`). */
  config: AuthConfig;
  /** One of `TAGS` (`openapi.ts`). */
  tag: string;
  operationId: string;
  summary: string;
  description: string;
}

/** `GET <path>`: one page of the tenant's `item`s, `{ data, meta }`. */
export function listRoute<T extends z.ZodType>(
  app: App,
  path: string,
  spec: RouteDoc & {
    item: T;
    /** The noun of the documented errors (`template`). */
    what: string;
    /** The 200's description and example page. */
    page: { description: string; examples: unknown };
    list: (tenantId: string, page: PageQuery) => Promise<{ items: unknown[]; total: number }>;
  },
): void {
  app.get(
    path,
    {
      config: spec.config,
      schema: {
        tags: [spec.tag],
        operationId: spec.operationId,
        summary: spec.summary,
        description: spec.description,
        security: KEY_OR_DASHBOARD,
        querystring: pageQuerySchema,
        response: listResponses(spec.item, {
          what: spec.what,
          description: spec.page.description,
          examples: spec.page.examples,
        }),
      },
    },
    async (request) => {
      const { items, total } = await spec.list(credentialOf(request).tenantId, request.query);
      return listAnswer(items, request.query, total);
    },
  );
}

/** `GET <path>/:id`: the tenant's one `item`, else 404 `<What> not found`. */
export function getRoute<T extends z.ZodType>(
  app: App,
  path: string,
  spec: RouteDoc & {
    item: T;
    /** The noun of the 404 (`Template`). */
    What: string;
    params: ReturnType<typeof resourceIdParam>;
    get: (tenantId: string, id: string) => Promise<object | null>;
  },
): void {
  app.get(
    path,
    {
      config: spec.config,
      schema: {
        tags: [spec.tag],
        operationId: spec.operationId,
        summary: spec.summary,
        description: spec.description,
        security: KEY_OR_DASHBOARD,
        params: spec.params,
        response: { 200: spec.item, ...resourceErrors(spec.What, { notFound: true }) },
      },
    },
    async (request) => {
      const found = await spec.get(credentialOf(request).tenantId, request.params.id);
      if (found === null) throw notFound(spec.What);
      return found;
    },
  );
}
