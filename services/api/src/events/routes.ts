import { httpError } from '@tern/http';
import { createEventPageCache, parseEventCursor } from '@tern/read-models';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { boundProject, credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { resourceErrors } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse, errors } from '../schemas.js';
import { cursorExpired, cursorGone, eventStreamCutoff } from './cutoff.js';
import { eventsQuerySchema, eventsResponseSchema, streamQuerySchema } from './schemas.js';
import { createTailHub } from './tail.js';

const JSON_TYPE = 'application/json; charset=utf-8';
/** What the plugin uses (built by `apiRoutes`). */
export type EventRouteDeps = Pick<
  ApiRouteDeps,
  'eventStreamDays' | 'eventStream' | 'now' | 'pool' | 'readModel' | 'retentionDays'
>;

/** `GET /events` and `GET /events/stream` (SPEC §25): the tenant's events after a cursor, listed or tailed. */
export const eventRoutes: FastifyPluginAsyncZod<EventRouteDeps> = async (app, deps) => {
  const cutoffOf = (tenantId: string) => eventStreamCutoff(deps, tenantId);
  // Pages read once are answered again from memory while the tenant's stream is unchanged under them
  // (one primary-key lookup checks it): the tail's catch-ups and repeated list reads share them.
  const { pageCacheBytes, ...tail } = deps.eventStream ?? {};
  const pages = createEventPageCache({ maxBytes: pageCacheBytes });
  const hub = createTailHub({
    pool: deps.pool,
    readPage: pages.page,
    cutoffOf,
    versionOf: (tenantId) => deps.readModel.version(tenantId),
    ...tail,
  });
  // Before the server waits for its connections to end: the streams are ended here.
  app.addHook('preClose', async () => hub.close());

  /** The caller's project rule: a project-bound key sees its project only (another's: nothing). */
  const projectOf = (request: { query: { project?: string | undefined } }, bound: string | null) => ({
    projectId: bound ?? request.query.project,
    empty: bound !== null && request.query.project !== undefined && request.query.project !== bound,
  });

  app.get(
    '/events',
    {
      config: { auth: 'jwt_or_key', scope: 'events:read' },
      schema: {
        tags: [TAGS.events],
        operationId: 'listEvents',
        summary: 'List events after a cursor',
        description:
          'The tenant’s events in one order that never changes: paging from any cursor gives every event after ' +
          'it exactly once, also while events are appended. Each event reads as its webhook body (SPEC §17) plus ' +
          '`id` and `cursor`. Without `after`, from the oldest event kept. Filters combine (AND). A cursor older ' +
          'than EVENT_STREAM_DAYS (default 30) or the tenant’s retention → 410. A key bound to a project sees ' +
          'that project’s events only. API key with `events:read`, or a dashboard JWT.\n\n' +
          'Example: `GET /events?after=1042&limit=500&types=email.bounced,email.complained`, then again with ' +
          '`after=` the answer’s `next`. `order=newest` reads backwards instead (newest first, `before=` the ' +
          'answer’s `next` for older ones): what a person looks at, before tailing `GET /events/stream` after the ' +
          'first one’s cursor.',
        security: KEY_OR_DASHBOARD,
        querystring: eventsQuerySchema,
        response: {
          200: eventsResponseSchema,
          400: errors.badRequest(
            'querystring.after: after must be a cursor: the `cursor` of an event (digits)',
          ),
          410: cursorGone,
          ...resourceErrors('event'),
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const { tenantId } = credential;
      const { after, limit, types, emailId, tag, order, before } = request.query;
      if (order === 'newest' && after !== undefined)
        throw httpError(400, 'querystring.after: after reads in stream order; with order=newest use before', {
          code: 'BAD_REQUEST',
        });
      if (order === 'stream' && before !== undefined)
        throw httpError(400, 'querystring.before: before needs order=newest (in stream order use after)', {
          code: 'BAD_REQUEST',
        });
      const { projectId, empty } = projectOf(request, boundProject(credential));
      if (empty) return { data: [], next: (order === 'newest' ? before : after) ?? '0', hasMore: false };
      const page = await pages.page(deps.pool, {
        tenantId,
        after,
        order,
        before,
        limit,
        cutoff: await cutoffOf(tenantId),
        types,
        emailId,
        tag,
        projectId,
      });
      if (page.expired) throw cursorExpired();
      return reply
        .type(JSON_TYPE)
        .send(page.encoded('{"data":', `,"next":"${page.next}","hasMore":${page.hasMore}}`));
    },
  );

  app.get(
    '/events/stream',
    {
      config: { auth: 'jwt_or_key', scope: 'events:read' },
      schema: {
        tags: [TAGS.events],
        operationId: 'streamEvents',
        summary: 'Tail events live (Server-Sent Events)',
        description:
          'A live tail of the tenant’s events (`text/event-stream`): one message per event, `id:` its cursor, ' +
          '`data:` the event as `GET /events` lists it. Starts after `Last-Event-ID` (a reconnecting client ' +
          'resumes exactly: nothing missed, nothing twice), else after `after`, else at the oldest event kept; ' +
          'catches up, then follows. A comment line every 15 s keeps proxies from closing it. Same filters and ' +
          'rules as `GET /events`; too many open streams → 429.\n\n' +
          'Example: `curl -N -H "Authorization: Bearer $KEY" "$TERN/events/stream?types=email.bounced"`',
        security: KEY_OR_DASHBOARD,
        querystring: streamQuerySchema,
        headers: z
          .object({
            'last-event-id': z.string().optional().meta({
              description: 'The last `id:` received: resume after it (takes precedence over `after`).',
            }),
          })
          .loose(),
        response: {
          200: {
            description: 'text/event-stream: `id: <cursor>` and `data: <event JSON>` per event.',
            content: {
              'text/event-stream': {
                schema: z.string().meta({
                  example:
                    'id: 1042\ndata: {"type":"email.delivered","id":"evt_01J9Z","cursor":"1042","data":{"emailId":"em_01J9Z"}}\n\n: keep-alive\n\n',
                }),
              },
            },
          },
          400: errors.badRequest('headers.last-event-id: Last-Event-ID must be a cursor'),
          410: cursorGone,
          429: errorResponse(
            429,
            'Too many open streams for this tenant or server.',
            'Too many open event streams',
          ),
          ...resourceErrors('event'),
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const { tenantId } = credential;
      const lastEventId = request.headers['last-event-id'];
      const from = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : request.query.after;
      const cursor = from === undefined ? 0n : parseEventCursor(from);
      if (cursor === null)
        throw httpError(400, 'headers.last-event-id: Last-Event-ID must be a cursor', {
          code: 'INVALID_CURSOR',
        });
      const { projectId, empty } = projectOf(request, boundProject(credential));
      const { types, emailId, tag } = request.query;
      const filter = { types, emailId, tag, projectId: empty ? '\u0000none' : projectId };
      if (!hub.admits(tenantId))
        throw httpError(429, 'Too many open event streams', { code: 'RATE_LIMITED' }, { 'retry-after': '5' });
      // An expired starting cursor is answered before the stream opens.
      const first = await pages.page(deps.pool, {
        tenantId,
        ...(from === undefined ? {} : { after: from }),
        limit: 1,
        cutoff: await cutoffOf(tenantId),
      });
      if (first.expired) throw cursorExpired();
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      reply.raw.write(': tern event stream\n\n');
      hub.open(tenantId, filter, reply.raw, cursor);
    },
  );
};
