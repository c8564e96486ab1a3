import {
  type ContactStore,
  createSegmentStore,
  normaliseDate,
  type PropertyType,
  type SegmentFilter,
  type SegmentStore,
  segmentFilterSchema,
} from '@tern/bulk';
import { contactSchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { READ, WRITE } from '../contacts/schemas.js';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  childListRoute,
  conflict,
  defineResource,
  deleteRoute,
  getRoute,
  listRoute,
  newResourceId,
  notFound,
  pageQuerySchema,
  pageWindow,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';

const FILTER_EXAMPLE = {
  and: [
    { audience: 'newsletter' },
    { property: 'plan', op: 'eq', value: 'pro' },
    { engagement: 'opened', days: 30 },
    { not: { topic: 'top_3WzN8kQ1vYp0aB7cD9eF2gH4' } },
  ],
};
const EXAMPLE = {
  id: 'seg_3WzN8kQ1vYp0aB7cD9eF2gH4',
  name: 'Engaged pro users',
  filter: FILTER_EXAMPLE,
  createdAt: '2026-06-15T12:00:00.000Z',
  updatedAt: '2026-06-15T12:00:00.000Z',
};

const filterSchema = segmentFilterSchema.meta({
  id: 'SegmentFilter',
  description:
    'A tree of clauses (at most 8 deep, 100 clauses): `{ and: [filter] }`, `{ or: [filter] }`, `{ not: filter }`, ' +
    '`{ property, op: eq|neq|gt|gte|lt|lte|contains|exists, value? }` (a defined contact property, the value of ' +
    'its type), `{ audience }`, `{ topic }` (subscribed to it), `{ engagement: opened|clicked|bounced|received, ' +
    'days }` (in the last N days), `{ tag }` (got mail with the tag), `{ campaign }` (got mail of the campaign).',
  example: FILTER_EXAMPLE,
});

export const segmentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    filter: filterSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ examples: [EXAMPLE] });

const name = z
  .string({ error: 'name must be a string of 1 to 100 characters' })
  .trim()
  .min(1, { error: 'name must be a string of 1 to 100 characters' })
  .max(100, { error: 'name must be a string of 1 to 100 characters' });

const createSegmentBodySchema = z
  .strictObject({ name, filter: filterSchema })
  .meta({ examples: [{ name: EXAMPLE.name, filter: FILTER_EXAMPLE }] });
const updateSegmentBodySchema = z
  .strictObject({ name: name.optional(), filter: filterSchema.optional() })
  .refine((b) => b.name !== undefined || b.filter !== undefined, { error: 'give name or filter' })
  .meta({ examples: [{ name: 'Engaged pro users (EU)' }] });

const params = resourceIdParam('segment', EXAMPLE.id);

const invalid = (message: string) =>
  httpError(400, `body.filter: ${message}`, { code: 'FST_ERR_VALIDATION' });

/**
 * A filter checked against the tenant's definitions: each property defined and compared with a
 * value of its type (a date normalised to `…Z`, so it orders like the stored ones), each topic the
 * tenant's. The checked filter is what is stored.
 */
export async function checkFilter(
  contacts: Pick<ContactStore, 'propertyTypes' | 'unknownTopics'>,
  tenantId: string,
  filter: SegmentFilter,
): Promise<SegmentFilter> {
  const types = await contacts.propertyTypes(tenantId);
  const topics: string[] = [];
  const walk = (f: SegmentFilter): SegmentFilter => {
    if ('and' in f) return { and: f.and.map(walk) };
    if ('or' in f) return { or: f.or.map(walk) };
    if ('not' in f) return { not: walk(f.not) };
    if ('topic' in f) topics.push(f.topic);
    if (!('property' in f)) return f;
    const type: PropertyType | undefined = types.get(f.property);
    if (type === undefined) throw invalid(`property ${f.property} is not defined (POST /contact-properties)`);
    if (f.op === 'exists') return f;
    if (f.op === 'contains' && type !== 'string')
      throw invalid(`contains needs a string property; ${f.property} is a ${type}`);
    if (type === 'boolean' && f.op !== 'eq' && f.op !== 'neq')
      throw invalid(`property ${f.property} is a boolean: use eq, neq or exists`);
    if (type === 'date') {
      const date = typeof f.value === 'string' ? normaliseDate(f.value) : null;
      if (date === null)
        throw invalid(`property ${f.property} is a date: the value must be an ISO 8601 date`);
      return { ...f, value: date };
    }
    if (typeof f.value !== type) throw invalid(`property ${f.property} is a ${type}: the value must be one`);
    return f;
  };
  const checked = walk(filter);
  const unknown = await contacts.unknownTopics(tenantId, [...new Set(topics)]);
  if (unknown.length > 0) throw invalid(`no topic ${unknown[0]} in this tenant`);
  return checked;
}

const countSchema = z
  .object({ total: z.number().int().meta({ description: 'Contacts matching now.' }) })
  .meta({ examples: [{ total: 1234 }] });

/** What the plugin uses (built by `apiRoutes`). */
export type SegmentRouteDeps = Pick<ApiRouteDeps, 'now'> & { contacts: ContactStore; segments: SegmentStore };

/** `/segments` (SPEC §27): named filters over contacts, evaluated when read. */
export const segmentRoutes: FastifyPluginAsyncZod<SegmentRouteDeps> = async (app, deps) => {
  app.post(
    '/segments',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'createSegment',
        summary: 'Create a segment',
        description:
          'A named filter over the tenant’s contacts, evaluated whenever it is read (`GET /segments/:id/contacts`) ' +
          'or a campaign naming it starts sending.',
        security: KEY_OR_DASHBOARD,
        body: createSegmentBodySchema,
        response: {
          201: segmentSchema,
          400: errors.badRequest('body.filter: property plan is not defined (POST /contact-properties)'),
          ...resourceErrors('segment'),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const filter = await checkFilter(deps.contacts, tenantId, request.body.filter);
      const segment = await deps.segments.insert(
        tenantId,
        { id: newResourceId('segment'), name: request.body.name, filter },
        deps.now(),
      );
      return reply.status(201).send(segment);
    },
  );

  app.post(
    '/segments/count',
    {
      config: READ,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'countSegment',
        summary: 'Count the contacts a filter matches',
        description: 'The live count of a filter not saved yet (the dashboard’s segment builder).',
        security: KEY_OR_DASHBOARD,
        body: z.strictObject({ filter: filterSchema }).meta({ examples: [{ filter: FILTER_EXAMPLE }] }),
        response: {
          200: countSchema,
          400: errors.badRequest('body.filter: property plan is not defined (POST /contact-properties)'),
          ...resourceErrors('segment'),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const filter = await checkFilter(deps.contacts, tenantId, request.body.filter);
      return { total: await deps.segments.count(tenantId, filter, deps.now()) };
    },
  );

  listRoute(app, '/segments', {
    config: READ,
    tag: TAGS.contacts,
    operationId: 'listSegments',
    summary: 'List segments',
    description: 'Newest first.',
    item: segmentSchema,
    what: 'segment',
    page: { description: 'One page of segments.', examples: [EXAMPLE] },
    list: (tenantId, page) => deps.segments.list(tenantId, pageWindow(page)),
  });

  getRoute(app, '/segments/:id', {
    config: READ,
    tag: TAGS.contacts,
    operationId: 'getSegment',
    summary: 'Get a segment',
    description: 'One segment of the tenant with its filter; another tenant’s id is a 404.',
    item: segmentSchema,
    What: 'Segment',
    params,
    get: (tenantId, id) => deps.segments.get(tenantId, id),
  });

  childListRoute(app, '/segments/:id/contacts', {
    config: READ,
    tag: TAGS.contacts,
    operationId: 'listSegmentContacts',
    summary: 'List the contacts of a segment',
    description:
      'The contacts the filter matches now (subscribed or not), newest first, with `meta.total` their count.',
    item: contactSchema,
    What: 'Segment',
    params,
    querystring: pageQuerySchema,
    page: {
      description: 'One page of the matching contacts.',
      examples: contactSchema.meta()?.examples ?? [],
    },
    list: async (tenantId, id, page) => {
      const segment = await deps.segments.get(tenantId, id);
      if (segment === null) return null;
      const { data, total } = await deps.segments.contacts(
        tenantId,
        segment.filter,
        pageWindow(page),
        deps.now(),
      );
      return { items: data, total };
    },
  });

  app.patch(
    '/segments/:id',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'updateSegment',
        summary: 'Update a segment',
        description: 'Changes the name or replaces the filter.',
        security: KEY_OR_DASHBOARD,
        params,
        body: updateSegmentBodySchema,
        response: {
          200: segmentSchema,
          400: errors.badRequest('body: give name or filter'),
          ...resourceErrors('Segment', { notFound: true }),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const filter =
        request.body.filter === undefined
          ? undefined
          : await checkFilter(deps.contacts, tenantId, request.body.filter);
      const segment = await deps.segments.update(
        tenantId,
        request.params.id,
        { name: request.body.name, filter },
        deps.now(),
      );
      if (segment === null) throw notFound('Segment');
      return segment;
    },
  );

  deleteRoute(app, '/segments/:id', {
    config: WRITE,
    tag: TAGS.contacts,
    operationId: 'deleteSegment',
    summary: 'Delete a segment',
    description: '409 while a draft or scheduled campaign names it.',
    What: 'Segment',
    params,
    errors: { conflict: 'Segment is used by a campaign' },
    remove: async (tenantId, id) => {
      const outcome = await deps.segments.delete(tenantId, id);
      if (outcome === 'in_use') throw conflict('Segment is used by a campaign');
      return outcome !== 'not_found';
    },
  });
};

/** `segments` in the routes' deps: its owner's repository over the pool (listed in `resources.generated.ts`). */
export const segmentsResource = defineResource({ segments: createSegmentStore }, segmentRoutes);
