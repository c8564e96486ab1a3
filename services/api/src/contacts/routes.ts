import type { ContactStore } from '@tern/bulk';
import {
  audienceListSchema,
  contactListSchema,
  contactSchema,
  createContactBodySchema,
  listMeta,
  updateContactBodySchema,
} from '@tern/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  deleteRoute,
  newResourceId,
  notFound,
  pageWindow,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import { CSV_CONTENT_TYPES, DEFAULT_IMPORT_MAX_BYTES } from './csv.js';
import { contactCsvRoutes } from './csv-routes.js';
import { checkContactExtras } from './extras.js';
import { contactPropertyRoutes } from './property-routes.js';
import {
  audiencesQuerySchema,
  conflict,
  conflictSchema,
  listQuerySchema,
  READ,
  readErrors,
  WRITE,
  withNotFound,
} from './schemas.js';

export interface ContactRoutesOptions extends Pick<ApiRouteDeps, 'now'> {
  contacts: ContactStore;
  /** Largest CSV body `POST /contacts/import` reads (default 64 MiB); more → 413. */
  importMaxBytes?: number;
}

/** Contacts and audiences (SPEC §14): CRUD, `GET /audiences`, CSV import and export. */
export const contactRoutes: FastifyPluginAsyncZod<ContactRoutesOptions> = async (app, deps) => {
  const importMaxBytes = deps.importMaxBytes ?? DEFAULT_IMPORT_MAX_BYTES;
  // The import reads the request body as a stream: this parser hands it over unread (no
  // buffering, no body limit of Fastify's; `importContacts` counts the bytes itself).
  app.addContentTypeParser(CSV_CONTENT_TYPES, (_request, payload, done) => done(null, payload));

  app.post(
    '/contacts',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'createContact',
        summary: 'Create a contact',
        description:
          'The address is stored lowercased; a second contact with the same address (any case) is a 409. ' +
          '`subscribed` defaults to true. `properties` must be defined (`POST /contact-properties`) and of ' +
          'their type; topic choices must name topics of the tenant (400 otherwise). API key with `contacts:write`, or a dashboard JWT.',
        security: KEY_OR_DASHBOARD,
        body: createContactBodySchema,
        response: {
          201: contactSchema,
          400: errors.badRequest('body.properties: property plan must be a string'),
          ...resourceErrors('contact', { conflict: conflictSchema }),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const extras = await checkContactExtras(deps.contacts, tenantId, request.body);
      const created = await deps.contacts.insert(
        tenantId,
        { id: newResourceId('contact'), ...request.body, ...extras },
        deps.now(),
      );
      if (created === 'exists') throw conflict();
      request.log.info({ contactId: created.id }, 'contact created');
      return reply.status(201).send(created);
    },
  );

  app.get(
    '/contacts',
    {
      config: READ,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'listContacts',
        summary: 'List contacts',
        description:
          'Newest first (`createdAt` desc, then `id` desc), paged like the delivery log; `audience` narrows ' +
          'to one audience, `email` to the contact with that address. API key with `contacts:read`, or a dashboard JWT.',
        security: KEY_OR_DASHBOARD,
        querystring: listQuerySchema,
        response: {
          200: contactListSchema,
          400: errors.badRequest('querystring.limit: limit must be an integer from 1 to 100'),
          ...readErrors,
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const { page, limit, audience, email } = request.query;
      const { data, total } = await deps.contacts.list(tenantId, {
        audience,
        email,
        ...pageWindow({ page, limit }),
      });
      return { data, meta: listMeta(page, limit, total) };
    },
  );

  // `GET /contacts/export` and `POST /contacts/import` (csv-routes.ts), in their place among the routes.
  contactCsvRoutes(app, deps, importMaxBytes);
  // `/contact-properties` (SPEC §27): the definitions of the values contacts carry.
  contactPropertyRoutes(app, deps);

  app.get(
    '/contacts/:id',
    {
      config: READ,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'getContact',
        summary: 'Get a contact',
        description:
          'One contact of the tenant; another tenant’s id is a 404 like an unknown one. API key with ' +
          '`contacts:read`, or a dashboard JWT.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('contact'),
        response: { 200: contactSchema, ...withNotFound },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const contact = await deps.contacts.get(tenantId, request.params.id);
      if (contact === null) throw notFound('Contact');
      return contact;
    },
  );

  app.patch(
    '/contacts/:id',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'updateContact',
        summary: 'Update a contact',
        description:
          'Changes the given fields; `attributes` and `audiences` replace the whole value, `properties` and ' +
          'topic choices merge into the contact’s (null removes a key: a topic returns to its default). `subscribed: true` ' +
          'resubscribes the contact but leaves the suppression list alone: an address suppressed by an ' +
          'unsubscribe gets mail again only once its suppression is deleted.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('contact'),
        body: updateContactBodySchema,
        response: {
          200: contactSchema,
          400: errors.badRequest('body.audiences: audiences must not repeat a name'),
          ...resourceErrors('Contact', { notFound: 'contact', conflict: conflictSchema }),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const extras = await checkContactExtras(deps.contacts, tenantId, request.body);
      const updated = await deps.contacts.update(
        tenantId,
        request.params.id,
        { ...request.body, ...extras },
        deps.now(),
      );
      if (updated === 'exists') throw conflict();
      if (updated === null) throw notFound('Contact');
      return updated;
    },
  );

  deleteRoute(app, '/contacts/:id', {
    config: WRITE,
    tag: TAGS.contacts,
    operationId: 'deleteContact',
    summary: 'Delete a contact',
    description:
      'Removes the contact. Its mail in the delivery log and its suppression stay: erasing an address ' +
      'everywhere is `POST /contacts/erase`.',
    What: 'Contact',
    params: resourceIdParam('contact'),
    errors: { notFound: 'contact' },
    remove: async (tenantId, id, request) => {
      if (!(await deps.contacts.delete(tenantId, id))) return false;
      request.log.info({ contactId: id }, 'contact deleted');
      return true;
    },
  });

  app.get(
    '/audiences',
    {
      config: READ,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'listAudiences',
        summary: 'List audiences',
        description:
          'The audience names the tenant’s contacts carry, by name, with how many contacts each has, how ' +
          'many of them are subscribed, and how many a campaign would reach now (`reachable`: subscribed and ' +
          'not suppressed, the fan-out’s own rule). An audience exists while a contact is in it; `name` ' +
          'narrows to one.',
        security: KEY_OR_DASHBOARD,
        querystring: audiencesQuerySchema,
        response: {
          200: audienceListSchema,
          400: errors.badRequest('querystring.page: page must be an integer ≥ 1'),
          ...readErrors,
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const { page, limit, name } = request.query;
      const { data, total } = await deps.contacts.audiences(tenantId, {
        ...pageWindow({ page, limit }),
        name,
      });
      return { data, meta: listMeta(page, limit, total) };
    },
  );
};
