import { Readable } from 'node:stream';
import type { ContactStore } from '@tern/bulk';
import { audienceNameSchema, importResultSchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import { type FastifyPluginAsyncZod, validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { newResourceId } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse, errors } from '../schemas.js';
import { CSV_CONTENT_TYPES, contactsCsv, importContacts } from './csv.js';
import { audienceQuery, READ, readErrors, WRITE } from './schemas.js';

const exportQuerySchema = z.object({ audience: audienceQuery });
const importQuerySchema = z.object({
  audience: audienceNameSchema
    .optional()
    .meta({ description: 'Adds every imported contact to this audience (kept with its others).' }),
});

/**
 * `GET /contacts/export` and `POST /contacts/import` (SPEC §14): registered by `contactRoutes` on
 * its own instance, whose content-type parser hands the import its CSV body as an unread stream.
 */
export function contactCsvRoutes(
  app: Parameters<FastifyPluginAsyncZod>[0],
  deps: Pick<ApiRouteDeps, 'now'> & { contacts: ContactStore },
  importMaxBytes: number,
): void {
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
      const properties = [...(await deps.contacts.propertyTypes(tenantId)).keys()];
      const stream = Readable.from(
        contactsCsv(deps.contacts.export(tenantId, request.query.audience), properties),
      );
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
      // The body is a stream (the CSV parser of `contactRoutes`): only the query is validated here.
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
          '`unsubscribed_at` are ignored, so an export imports back. A column named as a contact property ' +
          '(`POST /contact-properties`) carries its value, checked against its type (a number, true/false, ' +
          'an ISO 8601 date). Upsert on the address: a new address ' +
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
        contacts: deps.contacts,
        tenantId,
        body,
        addAudience: request.query.audience ?? null,
        properties: await deps.contacts.propertyTypes(tenantId),
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
}
