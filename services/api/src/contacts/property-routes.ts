import type { ContactStore } from '@tern/bulk';
import { MAX_PROPERTIES, PROPERTY_TYPES, propertyNameSchema } from '@tern/bulk';
import { createContactBodySchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import { conflict, notFound, resourceErrors } from '../resource-kit.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors, noContentSchema } from '../schemas.js';
import { HEADER_FIELDS } from './csv-rows.js';
import { READ, WRITE } from './schemas.js';

/** Names the CSV columns and the contact fields already use: a property may not take them. */
const RESERVED = new Set(
  [...Object.keys(HEADER_FIELDS), ...Object.keys(createContactBodySchema.shape)].map((k) => k.toLowerCase()),
);

const EXAMPLE = { name: 'plan', type: 'string', createdAt: '2026-06-15T12:00:00.000Z' };

export const contactPropertySchema = z
  .object({
    name: z.string(),
    type: z.enum(PROPERTY_TYPES),
    createdAt: z.string(),
  })
  .meta({ examples: [EXAMPLE] });

export const createContactPropertyBodySchema = z
  .strictObject({
    name: propertyNameSchema.meta({
      description: 'The key of the value on contacts and its CSV column (case-sensitive).',
      example: 'plan',
    }),
    type: z.enum(PROPERTY_TYPES, { error: 'type must be string, number, boolean or date' }),
  })
  .meta({ examples: [{ name: 'plan', type: 'string' }] });

const nameParam = z.object({ name: z.string().min(1).max(64).meta({ description: 'The property’s name.' }) });

/** `/contact-properties` (SPEC §27): typed definitions of the values contacts carry. */
export function contactPropertyRoutes(
  app: Parameters<FastifyPluginAsyncZod>[0],
  deps: Pick<ApiRouteDeps, 'now'> & { contacts: ContactStore },
): void {
  const r = app;
  r.post(
    '/contact-properties',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'createContactProperty',
        summary: 'Define a contact property',
        description:
          'A typed property (`string`, `number`, `boolean`, `date`) every contact may carry a value of; ' +
          `values are checked against it on every write and CSV import. At most ${MAX_PROPERTIES} per tenant; ` +
          'a name already defined is a 409.',
        security: KEY_OR_DASHBOARD,
        body: createContactPropertyBodySchema,
        response: {
          201: contactPropertySchema,
          400: errors.badRequest('body.type: type must be string, number, boolean or date'),
          ...resourceErrors('contact property', { conflict: 'Contact property plan already exists' }),
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const { name, type } = request.body;
      if (RESERVED.has(name.toLowerCase()))
        throw httpError(400, `body.name: ${name} is a contact field or CSV column; choose another name`, {
          code: 'FST_ERR_VALIDATION',
        });
      const created = await deps.contacts.insertProperty(tenantId, { name, type }, deps.now());
      if (created === 'exists') throw conflict(`Contact property ${name} already exists`);
      if (created === 'full')
        throw httpError(400, `body.name: the tenant has ${MAX_PROPERTIES} contact properties already`, {
          code: 'FST_ERR_VALIDATION',
        });
      return reply.status(201).send(created);
    },
  );

  r.get(
    '/contact-properties',
    {
      config: READ,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'listContactProperties',
        summary: 'List contact properties',
        description: `Every definition of the tenant, by name (at most ${MAX_PROPERTIES}: no paging).`,
        security: KEY_OR_DASHBOARD,
        response: {
          200: z.object({ data: z.array(contactPropertySchema) }).meta({ examples: [{ data: [EXAMPLE] }] }),
          ...resourceErrors('contact property'),
        },
      },
    },
    async (request) => ({ data: await deps.contacts.properties(credentialOf(request).tenantId) }),
  );

  r.delete(
    '/contact-properties/:name',
    {
      config: WRITE,
      schema: {
        tags: [TAGS.contacts],
        operationId: 'deleteContactProperty',
        summary: 'Delete a contact property',
        description:
          'Removes the definition and every contact’s value of it; a segment still naming it matches no contact by it.',
        security: KEY_OR_DASHBOARD,
        params: nameParam,
        response: { 204: noContentSchema, ...resourceErrors('Contact property', { notFound: true }) },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      if (!(await deps.contacts.deleteProperty(tenantId, request.params.name)))
        throw notFound('Contact property');
      return reply.status(204).send();
    },
  );
}
