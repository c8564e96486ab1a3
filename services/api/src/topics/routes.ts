import { createTopicStore, type TopicStore } from '@tern/bulk';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { READ, WRITE } from '../contacts/schemas.js';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  conflict,
  defineResource,
  deleteRoute,
  getRoute,
  listRoute,
  newResourceId,
  notFound,
  pageWindow,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';

const EXAMPLE = {
  id: 'top_3WzN8kQ1vYp0aB7cD9eF2gH4',
  name: 'Product updates',
  default: 'opt_in',
  public: true,
  createdAt: '2026-06-15T12:00:00.000Z',
  updatedAt: '2026-06-15T12:00:00.000Z',
};

const topicDefault = z.enum(['opt_in', 'opt_out'], { error: 'default must be opt_in or opt_out' }).meta({
  description:
    'What a contact that never chose gets: `opt_in` (receives the topic’s mail until it opts out) or `opt_out`.',
});

export const topicSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    default: z.enum(['opt_in', 'opt_out']),
    public: z.boolean().meta({ description: 'Shown on the preference page of the unsubscribe link.' }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ examples: [EXAMPLE] });

const name = z
  .string({ error: 'name must be a string of 1 to 100 characters' })
  .trim()
  .min(1, { error: 'name must be a string of 1 to 100 characters' })
  .max(100, { error: 'name must be a string of 1 to 100 characters' });

export const createTopicBodySchema = z
  .strictObject({ name, default: topicDefault, public: z.boolean({ error: 'public must be a boolean' }) })
  .meta({ examples: [{ name: 'Product updates', default: 'opt_in', public: true }] });
const updateTopicBodySchema = createTopicBodySchema
  .partial()
  .refine((b) => Object.keys(b).length > 0, { error: 'give at least one of name, default, public' })
  .meta({ examples: [{ public: false }] });

const params = resourceIdParam('topic', EXAMPLE.id);

/** What the plugin uses (built by `apiRoutes`). */
export type TopicRouteDeps = Pick<ApiRouteDeps, 'now'> & { topics: TopicStore };

/** `/topics` (SPEC §27): what contacts subscribe to; campaigns and sequences may name one. */
export const topicRoutes: FastifyPluginAsyncZod<TopicRouteDeps> = async (app, deps) => {
  app.post(
    '/topics',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'createTopic',
        summary: 'Create a topic',
        description:
          'A topic contacts opt in to or out of (`PATCH /contacts/:id { topics }`, or the preference page when ' +
          '`public`). A campaign or sequence naming it reaches only its subscribers.',
        security: KEY_OR_DASHBOARD,
        body: createTopicBodySchema,
        response: {
          201: topicSchema,
          400: errors.badRequest('body.default: default must be opt_in or opt_out'),
          ...resourceErrors('topic'),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const topic = await deps.topics.insert(
        tenantId,
        { id: newResourceId('topic'), ...request.body },
        deps.now(),
      );
      return reply.status(201).send(topic);
    },
  );

  listRoute(app, '/topics', {
    config: READ,
    tag: TAGS.contacts,
    operationId: 'listTopics',
    summary: 'List topics',
    description: 'Newest first.',
    item: topicSchema,
    what: 'topic',
    page: { description: 'One page of topics.', examples: [EXAMPLE] },
    list: (tenantId, page) => deps.topics.list(tenantId, pageWindow(page)),
  });

  getRoute(app, '/topics/:id', {
    config: READ,
    tag: TAGS.contacts,
    operationId: 'getTopic',
    summary: 'Get a topic',
    description: 'One topic of the tenant; another tenant’s id is a 404.',
    item: topicSchema,
    What: 'Topic',
    params,
    get: (tenantId, id) => deps.topics.get(tenantId, id),
  });

  app.patch(
    '/topics/:id',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'updateTopic',
        summary: 'Update a topic',
        description: 'Changes the given fields; a new `default` applies to every contact that never chose.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateTopicBodySchema,
        response: {
          200: topicSchema,
          400: errors.badRequest('body: give at least one of name, default, public'),
          ...resourceErrors('Topic', { notFound: true }),
        },
      },
    },
    async (request) => {
      const topic = await deps.topics.update(
        credentialOf(request).tenantId,
        request.params.id,
        request.body,
        deps.now(),
      );
      if (topic === null) throw notFound('Topic');
      return topic;
    },
  );

  deleteRoute(app, '/topics/:id', {
    config: WRITE,
    tag: TAGS.contacts,
    operationId: 'deleteTopic',
    summary: 'Delete a topic',
    description:
      'Removes the topic and the contacts’ choices of it; 409 while a sequence or a campaign not yet sent names it.',
    What: 'Topic',
    params,
    errors: { conflict: 'Topic is used by a campaign or a sequence' },
    remove: async (tenantId, id) => {
      const outcome = await deps.topics.delete(tenantId, id);
      if (outcome === 'in_use') throw conflict('Topic is used by a campaign or a sequence');
      return outcome !== 'not_found';
    },
  });
};

/** `topics` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const topicsResource = defineResource({ topics: createTopicStore }, topicRoutes);
