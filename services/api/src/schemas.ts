import { STATUS_CODES } from 'node:http';
import {
  type ErrorStatus,
  errorBodySchemaFor,
  GENERAL_ERROR_CODE,
  idSchema,
  scopeSchema,
  tenantIdSchema,
} from '@tern/contracts';
import type { ErrorExtra } from '@tern/http';
import { z } from 'zod';

/**
 * Zod schemas of the query API: they validate requests, serialize responses and generate the
 * OpenAPI document (`/docs/json`), so the three can never disagree. This module holds what every
 * route group shares (query integers, pages, path parameters, errors, the freshness header); each
 * resource's own schemas live in its folder (`analytics/`, `logs/`, `api-keys/`, `settings/`, …).
 */

// --- Query strings ---------------------------------------------------------------------------

/**
 * A query-string integer in `min..max`. Query values arrive as strings; only plain digits are
 * accepted (no `1e1`, `0x10`, ` 5`, `1.0`), and one message covers every way to get it wrong, so
 * the 400 names the field and says what is allowed.
 */
export function queryInteger(field: string, min: number, max: number | undefined, fallback: number) {
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

export const MAX_LOGS_LIMIT = 100;
export const DEFAULT_LOGS_LIMIT = 20;

/** `?projectId=`: narrows logs and analytics to one project (SPEC §16). */
export const projectFilter = idSchema('projectId')
  .optional()
  .meta({ description: 'Only the emails of this project.', example: 'prj_4Hs9dK2mQ7wE1rT6yU3iO8pA' });

/** `?page=&limit=` of the delivery log and of every resource list (SPEC §7). */
export const pageQuerySchema = z.object({
  page: queryInteger('page', 1, undefined, 1),
  limit: queryInteger('limit', 1, MAX_LOGS_LIMIT, DEFAULT_LOGS_LIMIT),
});

// --- Path parameters -------------------------------------------------------------------------

export const tenantParamsSchema = z.object({
  id: tenantIdSchema.meta({
    description: 'Tenant id; must be the tenant of the dashboard JWT.',
    example: 'acme',
  }),
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
  methodNotAllowed: errorResponse(
    405,
    'The route takes another method (`Allow` names it).',
    'This MCP server keeps no session and opens no stream: POST each JSON-RPC message',
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

export const noContentSchema = z
  .undefined()
  .meta({ description: 'Done (also when the key was already revoked).' });
