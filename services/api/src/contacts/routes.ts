import { Readable } from 'node:stream';
import {
  deleteContact,
  exportContacts,
  getContact,
  insertContact,
  listAudiences,
  listContacts,
  updateContact,
} from '@tern/bulk';
import {
  audienceListSchema,
  audienceNameSchema,
  contactListSchema,
  contactSchema,
  createContactBodySchema,
  importResultSchema,
  listMeta,
  updateContactBodySchema,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import { type FastifyPluginAsyncZod, validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import {
  newResourceId,
  notFound,
  pageQuerySchema,
  pageWindow,
  resourceErrors,
  resourceIdParam,
} from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse, errors, noContentSchema } from '../schemas.js';
import { CSV_CONTENT_TYPES, contactsCsv, DEFAULT_IMPORT_MAX_BYTES, importContacts } from './csv.js';

const READ = { auth: 'jwt_or_key', scope: 'contacts:read' } as const;
const WRITE = { auth: 'jwt_or_key', scope: 'contacts:write' } as const;

const audienceQuery = audienceNameSchema
  .optional()
  .meta({ description: 'Only the contacts of this audience.', example: 'newsletter' });
const listQuerySchema = pageQuerySchema.extend({
  audience: audienceQuery,
  email: z
    .string()
    .max(320)
    .optional()
    .meta({ description: 'Only the contact with this address (any case).', example: 'ada@example.com' }),
});
const audiencesQuerySchema = pageQuerySchema.extend({
  name: audienceNameSchema
    .optional()
    .meta({ description: 'Only this audience (none when no contact carries it).', example: 'newsletter' }),
});
const exportQuerySchema = z.object({ audience: audienceQuery });
const importQuerySchema = z.object({
  audience: audienceNameSchema
    .optional()
    .meta({ description: 'Adds every imported contact to this audience (kept with its others).' }),
});

const conflict = () => httpError(409, 'A contact with this email already exists', { code: 'CONTACT_EXISTS' });
const conflictSchema = errorResponse(
  409,
  'Another contact of the tenant has this address.',
  'A contact with this email already exists',
  { code: 'CONTACT_EXISTS' },
);
const readErrors = resourceErrors('contact');
const withNotFound = resourceErrors('Contact', { notFound: 'contact' });

export interface ContactRoutesOptions extends ApiRouteDeps {
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
          '`subscribed` defaults to true. API key with `contacts:write`, or a dashboard JWT.',
        security: KEY_OR_DASHBOARD,
        body: createContactBodySchema,
        response: {
          201: contactSchema,
          400: errors.badRequest('body.email: email must be a valid email address'),
          ...resourceErrors('contact', { conflict: conflictSchema }),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const created = await insertContact(
        deps.pool,
        tenantId,
        { id: newResourceId('contact'), ...request.body },
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
      const { data, total } = await listContacts(deps.pool, tenantId, {
        audience,
        email,
        ...pageWindow({ page, limit }),
      });
      return { data, meta: listMeta(page, limit, total) };
    },
  );

  app.get(
    '/contacts/export',
    {
      config: READ,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'exportContacts',
        summary: 'Export contacts as CSV',
        description:
          'Every contact of the tenant (or of `audience`) as `text/csv`, streamed, in id order. Columns: ' +
          '`id,email,first_name,last_name,subscribed,audiences,attributes,created_at,updated_at` ' +
          '(audiences joined by `;`, attributes as JSON). A cell that a spreadsheet would run as a formula ' +
          "(starting with `=`, `+`, `-`, `@`, TAB or CR) is prefixed with `'` (OWASP CSV injection rule); the import " +
          'removes that quote, so the file imports back unchanged.',
        security: KEY_OR_DASHBOARD,
        querystring: exportQuerySchema,
        response: {
          200: {
            description: 'The contacts as CSV, streamed.',
            content: {
              'text/csv': {
                schema: z.string().meta({
                  description: 'CSV (text/csv; charset=utf-8).',
                  example:
                    'id,email,first_name,last_name,subscribed,audiences,attributes,created_at\n' +
                    'ct_3WzN8kQ1vYp0aB7cD9eF2gH4,ada@example.com,Ada,Lovelace,true,newsletter,"{""plan"":""pro""}",2026-06-15T12:00:00.000Z,2026-06-15T12:00:00.000Z',
                }),
              },
            },
          },
          400: errors.badRequest('querystring.audience: audience must be 1..64 characters'),
          ...readErrors,
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const stream = Readable.from(contactsCsv(exportContacts(deps.pool, tenantId, request.query.audience)));
      return (
        reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="contacts.csv"')
          .header('cache-control', 'no-store')
          // A stream is sent as it is (Fastify never serializes one); the 200 schema documents it.
          .send(stream as unknown as string)
      );
    },
  );

  app.post(
    '/contacts/import',
    {
      config: WRITE,
      // The body is a stream (the CSV parser above): only the query is validated here.
      validatorCompiler: (req) =>
        req.httpPart === 'body'
          ? () => true
          : validatorCompiler(req as unknown as Parameters<typeof validatorCompiler>[0]),
      schema: {
        tags: [TAGS.contacts],
        operationId: 'importContacts',
        summary: 'Import contacts from CSV',
        description:
          'Body: `text/csv`, read as a stream (any size up to the server limit, default 64 MiB). The header row ' +
          'names the columns: `email` (required), `first_name`, `last_name`, `subscribed` (true/false/yes/no/1/0), ' +
          '`audiences` (names joined by `;`), `attributes` (a JSON object); `id`, `created_at`, `updated_at`, ' +
          '`unsubscribed_at` are ignored, so an export imports back. Upsert on the address: a new address ' +
          'creates a contact; for an existing one every non-empty cell replaces the field and an empty cell ' +
          'leaves it. An import never resubscribes a contact that unsubscribed. Invalid rows are skipped and ' +
          'reported (`row` counts the header as row 1); the valid ones are written. `audience` adds every ' +
          'imported contact to that audience.',
        security: KEY_OR_DASHBOARD,
        querystring: importQuerySchema,
        // Documents the body (text/csv); it is read as a stream, never validated as a whole (below).
        consumes: CSV_CONTENT_TYPES,
        body: z.string().meta({
          description: 'The contacts as CSV: a header row, then one row per contact (RFC 4180).',
          example: 'email,first_name,last_name,audiences\nada@example.com,Ada,Lovelace,newsletter',
        }),
        response: {
          200: importResultSchema,
          400: errorResponse(400, 'The CSV cannot be read.', 'body: the header row has no email column', {
            code: 'INVALID_CSV',
          }),
          ...readErrors,
          413: errorResponse(
            413,
            'The CSV is larger than the server accepts.',
            'The CSV body is larger than 67108864 bytes',
          ),
          415: errorResponse(415, 'The body is not `text/csv`.', 'Send the contacts as text/csv'),
        },
      },
    },
    async (request) => {
      const { tenantId } = credentialOf(request);
      const body: unknown = request.body;
      if (!(body instanceof Readable))
        throw httpError(415, 'Send the contacts as text/csv', { code: 'UNSUPPORTED_MEDIA_TYPE' });
      const result = await importContacts({
        pool: deps.pool,
        tenantId,
        body,
        addAudience: request.query.audience ?? null,
        maxBytes: importMaxBytes,
        now: deps.now,
        newId: () => newResourceId('contact'),
      });
      request.log.info(
        { rows: result.rows, created: result.created, updated: result.updated, failed: result.failed },
        'contacts imported',
      );
      return result;
    },
  );

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
      const contact = await getContact(deps.pool, tenantId, request.params.id);
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
          'Changes the given fields; `attributes` and `audiences` replace the whole value. `subscribed: true` ' +
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
      const updated = await updateContact(deps.pool, tenantId, request.params.id, request.body, deps.now());
      if (updated === 'exists') throw conflict();
      if (updated === null) throw notFound('Contact');
      return updated;
    },
  );

  app.delete(
    '/contacts/:id',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'deleteContact',
        summary: 'Delete a contact',
        description:
          'Removes the contact. Its mail in the delivery log and its suppression stay: erasing an address ' +
          'everywhere is `POST /contacts/erase`.',
        security: KEY_OR_DASHBOARD,
        params: resourceIdParam('contact'),
        response: { 204: noContentSchema, ...withNotFound },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      if (!(await deleteContact(deps.pool, tenantId, request.params.id))) throw notFound('Contact');
      request.log.info({ contactId: request.params.id }, 'contact deleted');
      return reply.status(204).send();
    },
  );

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
      const { data, total } = await listAudiences(deps.pool, tenantId, {
        ...pageWindow({ page, limit }),
        name,
      });
      return { data, meta: listMeta(page, limit, total) };
    },
  );
};
