import { LONE_SURROGATE, SCOPES, scopeSchema } from '@tern/contracts';
import { z } from 'zod';
import { tenantParamsSchema } from '../schemas.js';

/** Schemas of `/tenants/:id/api-keys*` (SPEC §3): requests, responses and their OpenAPI. */

export const apiKeyParamsSchema = tenantParamsSchema.extend({
  keyId: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'Id of the API key.', example: 'key_3f9c2a7d1b0e4c6a8d2f5e71' }),
});

const isoTimestamp = z.iso.datetime({ offset: true, error: 'expiresAt must be an ISO 8601 timestamp' });

/** C0 control characters and DEL (built from code points: the linter refuses them in a literal). */
const CONTROL_CHARACTER = new RegExp(
  `[${String.fromCharCode(0)}-${String.fromCharCode(0x1f)}${String.fromCharCode(0x7f)}]`,
);

export const createApiKeyBodySchema = z
  .strictObject({
    name: z
      .string({ error: 'name must be a string of 1 to 100 characters' })
      .min(1, { error: 'name must be a string of 1 to 100 characters' })
      .max(100, { error: 'name must be a string of 1 to 100 characters' })
      // Control characters (U+0000 cannot even be stored) and lone surrogates (invalid Unicode).
      .refine((v) => !CONTROL_CHARACTER.test(v) && !LONE_SURROGATE.test(v), {
        error: 'name must not contain control characters or invalid Unicode',
      })
      .meta({ description: 'A label for the key.', example: 'Production server' }),
    scopes: z
      .array(scopeSchema, { error: 'scopes must be an array of scopes' })
      .min(1, { error: 'scopes must contain at least one scope' })
      .refine((list) => new Set(list).size === list.length, { error: 'scopes must not repeat a scope' })
      .meta({
        description: `Non-empty list of distinct scopes among: ${SCOPES.join(', ')}.`,
        example: ['email:read'],
      }),
    expiresAt: isoTimestamp
      .nullable()
      .optional()
      .meta({ description: 'When the key stops working; must be in the future. Absent or null: never.' }),
    projectId: z
      .string({ error: 'projectId must be the id of one of the tenant’s projects' })
      .min(1, { error: 'projectId must be the id of one of the tenant’s projects' })
      .max(200, { error: 'projectId must be the id of one of the tenant’s projects' })
      .nullable()
      .optional()
      .meta({
        description:
          'Binds the key to one project (SPEC §16): it then sends and reads only within it. Absent or null: every project.',
        example: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA',
      }),
  })
  .meta({
    examples: [{ name: 'Production server', scopes: ['email:read'], expiresAt: '2027-01-01T00:00:00Z' }],
  });

const apiKeyFields = {
  id: z.string().meta({ description: 'Key id, for DELETE.' }),
  name: z.string(),
  scopes: z.array(scopeSchema),
  createdAt: z.string().meta({ description: 'ISO 8601.' }),
  expiresAt: z.string().nullable().meta({ description: 'ISO 8601; null = never expires.' }),
  projectId: z
    .string()
    .nullable()
    .meta({ description: 'The project the key is bound to; null = every project.' }),
};

export const createdApiKeySchema = z
  .object({
    ...apiKeyFields,
    key: z.string().meta({ description: 'The clear key. Shown this once: only its SHA-256 is stored.' }),
  })
  .meta({
    description: 'The key was created. Store `key` now: it cannot be shown again.',
    examples: [
      {
        id: 'key_3f9c2a7d1b0e4c6a8d2f5e71',
        name: 'Production server',
        scopes: ['email:read'],
        key: 'tern_Xq3v9LrT0aPz7bWc1Kd8Fm2Ng5Hs4Jt6Yu0Ei9Ro',
        createdAt: '2026-06-15T12:00:00.000Z',
        expiresAt: null,
        projectId: null,
      },
    ],
  });

export const apiKeyMetadataSchema = z.object({
  ...apiKeyFields,
  prefix: z.string().meta({ description: 'First characters of the key, to recognise it.' }),
  lastUsedAt: z
    .string()
    .nullable()
    .meta({ description: 'ISO 8601; recorded coarsely (flushed about every 10 s), null = never used.' }),
  revokedAt: z.string().nullable().meta({ description: 'ISO 8601; null = active.' }),
});

export const apiKeyListSchema = z
  .object({
    data: z.array(apiKeyMetadataSchema).meta({ description: 'Newest first, revoked keys included.' }),
  })
  .meta({
    description: 'The tenant’s API keys (metadata only: never the key or its hash).',
    examples: [
      {
        data: [
          {
            id: 'key_3f9c2a7d1b0e4c6a8d2f5e71',
            name: 'Production server',
            scopes: ['email:read'],
            prefix: 'tern_Xq3v9Lr',
            createdAt: '2026-06-15T12:00:00.000Z',
            lastUsedAt: '2026-06-15T12:05:10.000Z',
            expiresAt: null,
            revokedAt: null,
            projectId: null,
          },
        ],
      },
    ],
  });
