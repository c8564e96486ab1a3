import { STATUS_CODES } from 'node:http';
import {
  type ErrorStatus,
  emailLogEntrySchema,
  emailStatusSchema,
  errorBodySchemaFor,
  GENERAL_ERROR_CODE,
  idSchema,
  LONE_SURROGATE,
  logsPageMetaSchema,
  SCOPES,
  scopeSchema,
  tenantIdSchema,
  trackingSettingsSchema,
} from '@tern/contracts';
import type { ErrorExtra } from '@tern/http';
import { z } from 'zod';
import { encodeLogsCursor } from './logs/cursor.js';

/**
 * Zod schemas of the query API: they validate requests, serialize responses and generate the
 * OpenAPI document (`/docs/json`), so the three can never disagree.
 */

// --- Query strings ---------------------------------------------------------------------------

/**
 * A query-string integer in `min..max`. Query values arrive as strings; only plain digits are
 * accepted (no `1e1`, `0x10`, ` 5`, `1.0`), and one message covers every way to get it wrong, so
 * the 400 names the field and says what is allowed.
 */
function queryInteger(field: string, min: number, max: number | undefined, fallback: number) {
  const message =
    max === undefined
      ? `${field} must be an integer ≥ ${min}`
      : `${field} must be an integer from ${min} to ${max}`;
  const range = z.number().int({ error: message }).min(min, { error: message });
  return z
    .string({ error: message })
    .regex(/^[0-9]{1,16}$/, { error: message })
    .transform(Number)
    .pipe(
      max === undefined
        ? range.max(Number.MAX_SAFE_INTEGER, { error: message })
        : range.max(max, { error: message }),
    )
    .default(fallback)
    .meta({
      type: 'integer',
      minimum: min,
      ...(max === undefined ? {} : { maximum: max }),
      default: fallback,
      // The wire format is a digit string; documented as what it means.
      pattern: undefined,
      description: `${message.replace(`${field} must be an`, 'An')} (default ${fallback}).`,
    });
}

export const MAX_ANALYTICS_DAYS = 90;
export const DEFAULT_ANALYTICS_DAYS = 30;
export const MAX_LOGS_LIMIT = 100;
export const DEFAULT_LOGS_LIMIT = 20;

/** `?projectId=`: narrows logs and analytics to one project (SPEC §16). */
const projectFilter = idSchema('projectId')
  .optional()
  .meta({ description: 'Only the emails of this project.', example: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA' });

export const analyticsQuerySchema = z.object({
  days: queryInteger('days', 1, MAX_ANALYTICS_DAYS, DEFAULT_ANALYTICS_DAYS),
  projectId: projectFilter,
});

/** `?page=&limit=` of the delivery log and of every resource list (SPEC §7). */
export const pageQuerySchema = z.object({
  page: queryInteger('page', 1, undefined, 1),
  limit: queryInteger('limit', 1, MAX_LOGS_LIMIT, DEFAULT_LOGS_LIMIT),
});

/** A bounded query-string text whose 400 names the field. */
const queryText = (field: string, max: number, description: string, example: string) =>
  z
    .string({ error: `${field} must be a string of 1 to ${max} characters` })
    .min(1, { error: `${field} must be a string of 1 to ${max} characters` })
    .max(max, { error: `${field} must be a string of 1 to ${max} characters` })
    .optional()
    .meta({ description, example });

const queryTimestamp = (field: string, description: string, example: string) =>
  z.iso
    .datetime({ offset: true, error: `${field} must be an ISO 8601 timestamp` })
    .optional()
    .meta({ description, example });

/** A `meta.nextCursor` as this server issues it: the page after the example page below. */
const CURSOR_EXAMPLE = encodeLogsCursor({ createdAt: '2026-06-15T11:59:00.000000', id: 'em_01', page: 2 });

export const logsQuerySchema = pageQuerySchema
  .extend({
    status: z
      .string({ error: `status must be one of ${emailStatusSchema.options.join(', ')}` })
      .transform((s) => s.toUpperCase())
      .pipe(
        z.enum(emailStatusSchema.options, {
          error: `status must be one of ${emailStatusSchema.options.join(', ')}`,
        }),
      )
      .optional()
      .meta({
        type: 'string',
        enum: emailStatusSchema.options,
        description: 'Only entries with this status (any case).',
        example: 'DELIVERED',
      }),
    from: queryTimestamp(
      'from',
      'Only entries with `createdAt` ≥ this ISO 8601 time.',
      '2026-06-01T00:00:00Z',
    ),
    to: queryTimestamp('to', 'Only entries with `createdAt` ≤ this ISO 8601 time.', '2026-06-15T23:59:59Z'),
    tag: queryText('tag', 256, 'Only entries whose `tags` include this tag (exact).', 'receipt'),
    q: queryText(
      'q',
      320,
      'Recipient address, exact or prefix, case-insensitive (`ada@` finds `Ada@example.com`).',
      'ada@',
    ),
    projectId: projectFilter,
    cursor: queryText(
      'cursor',
      512,
      'Opaque position from `meta.nextCursor`: the next page at constant cost. Send the same filters; `page` is then ignored.',
      CURSOR_EXAMPLE,
    ),
  })
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), {
    error: 'from must not be after to',
    path: ['from'],
  });

// --- Path parameters -------------------------------------------------------------------------

export const tenantParamsSchema = z.object({
  id: tenantIdSchema.meta({
    description: 'Tenant id; must be the tenant of the dashboard JWT.',
    example: 'acme',
  }),
});

export const apiKeyParamsSchema = tenantParamsSchema.extend({
  keyId: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'Id of the API key.', example: 'key_3f9c2a7d1b0e4c6a8d2f5e71' }),
});

// --- Errors ----------------------------------------------------------------------------------

/**
 * An error answer of one status for route `response` maps, derived from the contract's
 * `ERROR_CODES_BY_STATUS`: `statusCode` that status, `code` one of its codes, documented with an
 * example body (its `code` the status's general one unless `extra` names another). Loose: some
 * errors add fields (`missingScope`, `issues`).
 */
export const errorResponse = <S extends ErrorStatus>(
  status: S,
  description: string,
  message: string,
  extra: Partial<ErrorExtra<S>> = {},
) =>
  errorBodySchemaFor(status)
    .extend({
      missingScope: scopeSchema
        .optional()
        .meta({ description: 'On a 403 for a key lacking a scope: the scope the route requires.' }),
    })
    .loose()
    .meta({
      description,
      examples: [
        {
          statusCode: status,
          error: STATUS_CODES[status],
          message,
          code: GENERAL_ERROR_CODE[status],
          ...extra,
        },
      ],
    });

export const errors = {
  badRequest: (message: string) =>
    errorResponse(400, 'Invalid request: the message names the field.', message, {
      code: 'FST_ERR_VALIDATION',
    }),
  unauthorized: errorResponse(
    401,
    'No credential, or an invalid, expired or revoked one.',
    'Missing credential: send Authorization: Bearer <token> or X-API-Key: <key>',
    { code: 'MISSING_CREDENTIAL' },
  ),
  forbiddenKind: errorResponse(
    403,
    'The credential is of the wrong kind (an API key where a dashboard session is required), of another tenant, or lacks the role.',
    'A dashboard session (JWT) is required for this endpoint; API keys are not accepted',
  ),
  forbiddenScope: errorResponse(
    403,
    'The API key lacks the scope this route requires (`missingScope`).',
    'Missing required API key scope',
    { code: 'MISSING_SCOPE', missingScope: 'email:read' },
  ),
  notFound: errorResponse(404, 'No such resource for this tenant.', 'API key not found'),
  conflict: errorResponse(
    409,
    'The request conflicts with the resource’s state (e.g. an Idempotency-Key reused with another body).',
    'Idempotency-Key was already used with a different request body',
    { code: 'IDEMPOTENCY_KEY_REUSED' },
  ),
  unavailable: errorResponse(
    503,
    'The event log cannot take the request now; nothing was accepted. Retry after `Retry-After`.',
    'Event log unavailable: nothing was queued, retry later',
    { code: 'LOG_UNAVAILABLE' },
  ),
};

// --- Freshness header ------------------------------------------------------------------------

export const AS_OF_HEADER = 'x-tern-as-of';

/** OpenAPI description of the freshness header, attached to the 200 of analytics and logs. */
export const asOfHeaderDoc = {
  'X-Tern-As-Of': {
    type: 'string',
    format: 'date-time',
    description:
      'When the projector last committed a batch: the data reflects every event projected until then. ' +
      'Absent while nothing was projected yet.',
  },
};

// --- Analytics -------------------------------------------------------------------------------

const count = (description: string) => z.number().int().meta({ description });
const percent = (description: string) =>
  z.number().meta({ description: `${description}, in percent, one decimal, 0 when the denominator is 0.` });

export const periodSchema = z
  .object({
    days: z.number().int().meta({ description: 'Length of the period in UTC days (today included).' }),
    since: z.string().meta({ description: '00:00:00.000Z of the first day (today − days + 1).' }),
    until: z.string().meta({ description: 'The time of the request.' }),
  })
  .meta({ description: 'The period, UTC.' });

export const totalsSchema = z.object({
  total: count('Emails queued in the period.'),
  sent: count('Emails with status SENT or DELIVERED.'),
  opened: count('Emails opened at least once.'),
  clicked: count('Emails clicked at least once.'),
  bounced: count('Emails with status BOUNCED.'),
  complained: count('Emails with at least one complaint.'),
  failed: count('Emails with status FAILED.'),
});

export const ratesSchema = z.object({
  openRate: percent('opened / sent'),
  clickRate: percent('clicked / sent'),
  bounceRate: percent('bounced / total'),
  complaintRate: percent('complained / sent'),
});

export const summaryResponseSchema = z
  .object({ period: periodSchema, totals: totalsSchema, rates: ratesSchema })
  .meta({
    description: 'Totals and rates over the period.',
    headers: asOfHeaderDoc,
    examples: [
      {
        period: { days: 7, since: '2026-06-09T00:00:00.000Z', until: '2026-06-15T12:00:00.000Z' },
        totals: { total: 120, sent: 100, opened: 45, clicked: 12, bounced: 4, complained: 1, failed: 3 },
        rates: { openRate: 45, clickRate: 12, bounceRate: 3.3, complaintRate: 1 },
      },
    ],
  });

export const dailyBucketSchema = z.object({
  date: z.string().meta({ description: 'UTC date, YYYY-MM-DD.' }),
  sent: count('Emails created that day with status SENT or DELIVERED.'),
  opened: count('Emails created that day and opened at least once.'),
  clicked: count('Emails created that day and clicked at least once.'),
  bounced: count('Emails created that day with status BOUNCED.'),
});

export const dailyResponseSchema = z
  .object({
    days: z.number().int().meta({ description: 'Number of buckets.' }),
    daily: z
      .array(dailyBucketSchema)
      .meta({ description: 'Exactly `days` buckets, oldest first, zero-filled.' }),
  })
  .meta({
    description: 'One bucket per UTC day of the period, by the day emails were created.',
    headers: asOfHeaderDoc,
    examples: [
      {
        days: 2,
        daily: [
          { date: '2026-06-14', sent: 40, opened: 18, clicked: 5, bounced: 1 },
          { date: '2026-06-15', sent: 0, opened: 0, clicked: 0, bounced: 0 },
        ],
      },
    ],
  });

export const topTemplateSchema = z.object({
  id: z.string().meta({ description: 'Template id.' }),
  name: z.string().meta({ description: 'Template name; the id when the template is unknown.' }),
  subject: z.string().meta({ description: 'Template subject; empty when the template is unknown.' }),
  sent: count('Emails of the template with status SENT or DELIVERED.'),
  opened: count('Emails of the template opened at least once.'),
  clicked: count('Emails of the template clicked at least once.'),
});

export const topTemplatesResponseSchema = z
  .object({
    top: z.array(topTemplateSchema).meta({ description: 'At most 10, by sent desc, then id asc.' }),
  })
  .meta({
    description: 'The templates of the period with the most sent emails.',
    headers: asOfHeaderDoc,
    examples: [
      {
        top: [
          { id: 'welcome', name: 'Welcome', subject: 'Welcome to Acme', sent: 80, opened: 40, clicked: 10 },
          { id: 'tpl_unknown', name: 'tpl_unknown', subject: '', sent: 20, opened: 5, clicked: 2 },
        ],
      },
    ],
  });

// --- Logs ------------------------------------------------------------------------------------

export const logsResponseSchema = z
  .object({ data: z.array(emailLogEntrySchema), meta: logsPageMetaSchema })
  .meta({
    description: 'One page of the delivery log, newest first.',
    headers: asOfHeaderDoc,
    examples: [
      {
        data: [
          {
            id: 'em_01',
            toEmail: 'ada@example.com',
            subject: 'Your receipt',
            status: 'DELIVERED',
            provider: 'ses',
            messageId: '0100018f-abc',
            createdAt: '2026-06-15T11:59:00.000Z',
            tags: ['receipt'],
          },
        ],
        // `?status=delivered&tag=receipt&limit=1`: more pages follow, so a cursor to the next one.
        meta: { page: 1, limit: 1, total: 1342, totalPages: 1342, nextCursor: CURSOR_EXAMPLE },
      },
    ],
  });

// --- API keys --------------------------------------------------------------------------------

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

export const noContentSchema = z
  .undefined()
  .meta({ description: 'Done (also when the key was already revoked).' });

// --- Tenant settings -------------------------------------------------------------------------

export const MAX_RETENTION_DAYS = 3650;

const retentionDaysSchema = z
  .number({ error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null` })
  .int({ error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null` })
  .min(1, { error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null` })
  .max(MAX_RETENTION_DAYS, {
    error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null`,
  })
  .nullable()
  .meta({
    description:
      'Log and analytics retention of the tenant in days; null = the server default (RETENTION_DAYS). ' +
      'Older entries are hidden at once and deleted by the retention job.',
  });

const trackingSchema = trackingSettingsSchema.meta({
  description:
    'Open and click tracking of sent mail (SPEC §11): a pixel and rewritten links. Default both on.',
});

/** SPEC §23: the tenant's send rate. */
export const MAX_SEND_RATE_PER_SECOND = 1_000_000;
const sendRateError = `sendRatePerSecond must be an integer from 1 to ${MAX_SEND_RATE_PER_SECOND}, or null`;
const sendRatePerSecondSchema = z
  .number({ error: sendRateError })
  .int({ error: sendRateError })
  .min(1, { error: sendRateError })
  .max(MAX_SEND_RATE_PER_SECOND, { error: sendRateError })
  .nullable()
  .meta({
    description:
      'Emails per second the tenant’s mail is handed to the provider at most (SPEC §23); null = the server ' +
      'default (SEND_RATE_PER_SECOND, `defaultSendRatePerSecond`).',
  });

export const tenantSettingsSchema = z
  .strictObject({
    retentionDays: retentionDaysSchema.optional(),
    tracking: trackingSchema.optional(),
    sendRatePerSecond: sendRatePerSecondSchema.optional(),
  })
  .refine(
    (b) => b.retentionDays !== undefined || b.tracking !== undefined || b.sendRatePerSecond !== undefined,
    { error: 'retentionDays, tracking or sendRatePerSecond is required' },
  )
  .meta({
    description: 'Fields left out keep their value.',
    examples: [
      { retentionDays: 30 },
      { tracking: { opens: false, clicks: true } },
      { sendRatePerSecond: 20 },
    ],
  });

export const tenantSettingsResponseSchema = z
  .object({
    retentionDays: retentionDaysSchema,
    defaultRetentionDays: z.number().int().meta({
      description: 'The server default (RETENTION_DAYS): the retention while `retentionDays` is null.',
    }),
    tracking: trackingSchema,
    sendRatePerSecond: sendRatePerSecondSchema,
    defaultSendRatePerSecond: z.number().int().meta({
      description:
        'The server default (SEND_RATE_PER_SECOND) while `sendRatePerSecond` is null; 0 = unlimited.',
    }),
  })
  .meta({
    description: 'The tenant’s settings.',
    examples: [
      {
        retentionDays: 30,
        defaultRetentionDays: 90,
        tracking: { opens: true, clicks: true },
        sendRatePerSecond: null,
        defaultSendRatePerSecond: 100,
      },
    ],
  });
