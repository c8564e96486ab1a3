import { audienceNameSchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import { z } from 'zod';
import type { AuthConfig } from '../credentials.js';
import { pageQuerySchema, resourceErrors } from '../resource-kit.js';
import { errorResponse } from '../schemas.js';

/** What the contact route modules (`routes.ts`, `csv-routes.ts`) share: auth, query schemas, error answers. */

export const READ = { auth: 'jwt_or_key', scope: 'contacts:read' } as const satisfies AuthConfig;
export const WRITE = { auth: 'jwt_or_key', scope: 'contacts:write' } as const satisfies AuthConfig;

export const audienceQuery = audienceNameSchema
  .optional()
  .meta({ description: 'Only the contacts of this audience.', example: 'newsletter' });
export const listQuerySchema = pageQuerySchema.extend({
  audience: audienceQuery,
  email: z
    .string()
    .max(320)
    .optional()
    .meta({ description: 'Only the contact with this address (any case).', example: 'ada@example.com' }),
});
export const audiencesQuerySchema = pageQuerySchema.extend({
  name: audienceNameSchema
    .optional()
    .meta({ description: 'Only this audience (none when no contact carries it).', example: 'newsletter' }),
});

export const conflict = () =>
  httpError(409, 'A contact with this email already exists', { code: 'CONTACT_EXISTS' });
export const conflictSchema = errorResponse(
  409,
  'Another contact of the tenant has this address.',
  'A contact with this email already exists',
  { code: 'CONTACT_EXISTS' },
);
export const readErrors = resourceErrors('contact');
export const withNotFound = resourceErrors('Contact', { notFound: 'contact' });
