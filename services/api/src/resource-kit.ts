import { randomBase62 } from '@tern/auth';
import {
  listMeta,
  listResponseSchema,
  pageWindow,
  RESOURCE_ID_PREFIXES,
  type ResourceKind,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import { idTime } from '@tern/kernel';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { z } from 'zod';
import { type AuthConfig, credentialOf } from './credentials.js';
import { KEY_OR_DASHBOARD } from './openapi.js';
import { errorResponse, errors, noContentSchema, pageQuerySchema } from './schemas.js';

/**
 * What every tenant-resource plugin uses (templates, suppressions, projects, webhooks, contacts,
 * campaigns, sequences): ids, paging, the 404 that hides other tenants' resources, the documented
 * errors, and the list, get and delete route blocks they all repeat (`listRoute`, `getRoute`,
 * `deleteRoute`).
 */

/**
 * A tenant resource as `apiRoutes` mounts it: `name`, the key of its repository in the routes'
 * deps (`templates`); `store`, its owner package's repository factory over the pool; `routes`, its
 * plugin, which takes that repository under `name` (and what else of `ApiRouteDeps` it picks).
 * Each resource's routes file exports one; `resources.generated.ts` lists them all
 * (`npm run gen:resources`), so a new resource edits no list, no store table, by hand.
 */
export interface ResourceModule<N extends string = string, D extends object = never> {
  name: N;
  store: (pool: pg.Pool) => D[N & keyof D];
  routes: FastifyPluginAsyncZod<D>;
}

/**
 * A routes file's {@link ResourceModule}: `{ templates: createTemplateStore }` names the repository
 * and its factory; `routes` must take what it makes under that name.
 */
export function defineResource<const N extends string, D extends { [K in N]: unknown } & object>(
  store: { [K in N]: (pool: pg.Pool) => NoInfer<D>[K] },
  routes: FastifyPluginAsyncZod<D>,
): ResourceModule<N, D> {
  const [name, factory] = Object.entries(store)[0] as [N, (pool: pg.Pool) => D[N & keyof D]];
  return { name, store: factory, routes };
}

/** Random part of a resource id: 20 base62 characters ≈ 119 bits (SPEC asks for ≥ 20). */
const RANDOM_ID_LENGTH = 20;

/**
 * A fresh id of that kind, `em_01KBR8Z3QX…`: its creation time (`idTime`, 10 characters) and 20
 * random base62 characters; ids made later sort after (in byte order and in a locale's).
 */
export function newResourceId(kind: ResourceKind, now = Date.now()): string {
  return `${RESOURCE_ID_PREFIXES[kind]}_${idTime(now)}${randomBase62(RANDOM_ID_LENGTH)}`;
}

/** `?page=&limit=` of every list, validated like the delivery log's (SPEC §7). */
export { pageQuerySchema };
export type PageQuery = z.infer<typeof pageQuerySchema>;

// SQL `LIMIT`/`OFFSET` of a page (shared with the stores of packages/bulk).
export { pageWindow };

/**
 * Unknown id, or another tenant's: the same 404 either way (SPEC part two: never 403, never its
 * data).
 */
export const notFound = (what: string) => httpError(404, `${what} not found`, { code: 'NOT_FOUND' });

/** A write that contradicts what exists (an id taken, a project still holding emails). */
export const conflict = (message: string) => httpError(409, message, { code: 'CONFLICT' });

/**
 * The documented error answers of a resource route: 401 always, 403 (a key lacking the scope, a
 * JWT lacking the role — or the route's own `forbidden` answer), 404 when the route names a
 * resource (`notFound: true`, or the noun its description uses when it is not `what`), 409 with
 * its example message (or the route's own `conflict` schema).
 */
export function resourceErrors(
  what: string,
  opts: {
    notFound?: boolean | string;
    conflict?: string | ReturnType<typeof errorResponse>;
    forbidden?: ReturnType<typeof errorResponse>;
  } = {},
) {
  const noun = typeof opts.notFound === 'string' ? opts.notFound : what;
  return {
    401: errors.unauthorized,
    403: opts.forbidden ?? errors.forbiddenScope,
    ...(opts.notFound
      ? { 404: errorResponse(404, `No such ${noun} for this tenant.`, `${what} not found`) }
      : {}),
    ...(opts.conflict === undefined
      ? {}
      : {
          409:
            typeof opts.conflict === 'string'
              ? errorResponse(409, 'Conflicts with what exists.', opts.conflict)
              : opts.conflict,
        }),
  };
}

/**
 * The documented answers of a resource's list route: 200 with one page of `item` (its `examples`
 * as that page), the 400 of a bad page or limit, and {@link resourceErrors}.
 */
export function listResponses<T extends z.ZodType>(
  item: T,
  opts: { what: string; description: string; examples: unknown; badRequest?: string },
) {
  return {
    200: listResponseSchema(item).meta({
      description: opts.description,
      examples: [{ data: opts.examples, meta: { page: 1, limit: 20, total: 1, totalPages: 1 } }],
    }),
    400: errors.badRequest(opts.badRequest ?? 'querystring.limit: limit must be an integer from 1 to 100'),
    ...resourceErrors(opts.what),
  };
}

/** `{ data, meta }` of a list route (SPEC part two: every list pages like the delivery log). */
export const listAnswer = <T>(items: T[], page: PageQuery, total: number) => ({
  data: items,
  meta: listMeta(page.page, page.limit, total),
});

/** A path parameter that names a resource; anything not shaped like an id is simply not found. */
export const resourceIdParam = (what: string, example?: string) =>
  z.object({
    id: z
      .string()
      .min(1)
      .max(200)
      .meta({ description: `Id of the ${what}.`, ...(example === undefined ? {} : { example }) }),
  });

// --- Route blocks ------------------------------------------------------------------------------

/*
 * The CRUD route blocks every tenant resource repeats, declared once: `GET /<resource>` (one page,
 * newest first), `GET /<resource>/:id` (one, or the 404 that hides other tenants') and
 * `DELETE /<resource>/:id` (204, or that 404). A resource's routes file names what differs — path,
 * tag, operation id, words, schema — and the repository call; the schema, status codes and
 * credential rule are the same as a hand-written block's.
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

/**
 * A route's options: its credential rule, and its schema — its words, its credentials (an API key
 * or a dashboard JWT), then `schema`.
 */
const routeOptions = <S extends object>(doc: RouteDoc, schema: S) => ({
  config: doc.config,
  schema: {
    tags: [doc.tag],
    operationId: doc.operationId,
    summary: doc.summary,
    description: doc.description,
    security: KEY_OR_DASHBOARD,
    ...schema,
  },
});

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
    routeOptions(spec, {
      querystring: pageQuerySchema,
      response: listResponses(spec.item, {
        what: spec.what,
        description: spec.page.description,
        examples: spec.page.examples,
      }),
    }),
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
    routeOptions(spec, {
      params: spec.params,
      response: { 200: spec.item, ...resourceErrors(spec.What, { notFound: true }) },
    }),
    async (request) => {
      const found = await spec.get(credentialOf(request).tenantId, request.params.id);
      if (found === null) throw notFound(spec.What);
      return found;
    },
  );
}

/**
 * `GET <path>` of what one resource holds (`/<resource>/:id/<items>`): one page of its `item`s
 * under `querystring` (the page and the route's own filters), else 404 `<What> not found` — `list`
 * answers null when the tenant has no such resource.
 */
export function childListRoute<T extends z.ZodType, Q extends typeof pageQuerySchema>(
  app: App,
  path: string,
  spec: RouteDoc & {
    item: T;
    /** The noun of the 404 (`Sequence`). */
    What: string;
    params: ReturnType<typeof resourceIdParam>;
    querystring: Q;
    /** The 200's description and example page; the 400's example message when not the limit's. */
    page: { description: string; examples: unknown; badRequest?: string };
    list: (
      tenantId: string,
      id: string,
      query: z.infer<Q>,
    ) => Promise<{ items: unknown[]; total: number } | null>;
  },
): void {
  app.get(
    path,
    routeOptions(spec, {
      params: spec.params,
      querystring: spec.querystring,
      response: {
        ...listResponses(spec.item, { what: spec.What, ...spec.page }),
        ...resourceErrors(spec.What, { notFound: true }),
      },
    }),
    async (request) => {
      const query = request.query as z.infer<Q>;
      const found = await spec.list(credentialOf(request).tenantId, request.params.id, query);
      if (found === null) throw notFound(spec.What);
      return listAnswer(found.items, query, found.total);
    },
  );
}

/**
 * `DELETE <path>/:id`: 204 once `remove` has deleted the tenant's one, else 404 `<What> not found`.
 * `remove` answers whether there was one; any other outcome (a 409) it throws itself, and it logs
 * what the route logs. `errors` are the options of {@link resourceErrors} beside its 404.
 */
export function deleteRoute(
  app: App,
  path: string,
  spec: RouteDoc & {
    /** The noun of the 404 (`Template`). */
    What: string;
    params: ReturnType<typeof resourceIdParam>;
    /** The 204's description, where the document gives one (`Deleted.`). */
    deleted?: string;
    errors?: Parameters<typeof resourceErrors>[1];
    remove: (tenantId: string, id: string, request: FastifyRequest) => Promise<boolean>;
  },
): void {
  app.delete(
    path,
    routeOptions(spec, {
      params: spec.params,
      response: {
        204:
          spec.deleted === undefined ? noContentSchema : noContentSchema.meta({ description: spec.deleted }),
        ...resourceErrors(spec.What, { notFound: true, ...spec.errors }),
      },
    }),
    async (request, reply) => {
      if (!(await spec.remove(credentialOf(request).tenantId, request.params.id, request)))
        throw notFound(spec.What);
      return reply.status(204).send();
    },
  );
}
