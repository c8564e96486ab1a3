import { z } from 'zod';

/**
 * The machine-readable reasons of every error body (SPEC §4), by HTTP status. Closed: a code a
 * route answers with is one of these, and the type of `httpError` only accepts a code of its own
 * status. The OpenAPI error responses are derived from this table (`errorBodySchemaFor`), so the
 * documentation cannot name a code the server never sends. A new reason is a line here.
 */
export const ERROR_CODES_BY_STATUS = {
  400: [
    /** A field of the body, query, path or headers is invalid; the message names it. */
    'FST_ERR_VALIDATION',
    /** The request cannot be read at all (not JSON, empty body where one is required). */
    'BAD_REQUEST',
    /** A value holds U+0000 or invalid Unicode: no store can hold it. */
    'INVALID_CHARACTERS',
    /** A store refused a value of the request (out of range, too long for its column). */
    'INVALID_DATA',
    /** `POST /events`: one or more events are invalid (`issues` lists them). */
    'INVALID_EVENTS',
    /** `GET /emails/logs`: `cursor` is not one this API handed out. */
    'INVALID_CURSOR',
    /** `POST /contacts/import`: the CSV cannot be read. */
    'INVALID_CSV',
    /** Production with a real provider: a `from` whose domain the tenant has not verified (SPEC §20); the message names it. */
    'DOMAIN_NOT_VERIFIED',
  ],
  401: [
    /** No credential was sent. */
    'MISSING_CREDENTIAL',
    /** The credential is unknown, revoked, malformed or badly signed. */
    'INVALID_CREDENTIAL',
    /** The dashboard JWT has expired (or lives longer than JWT_MAX_LIFETIME_DAYS allows). */
    'EXPIRED_CREDENTIAL',
  ],
  403: [
    /** The credential is of the wrong kind, of another tenant, lacks the role, or a project key may not do this. */
    'FORBIDDEN',
    /** The API key lacks the route's scope (`missingScope` names it). */
    'MISSING_SCOPE',
  ],
  404: [
    /** No such resource for this tenant (another tenant's is not found either). */
    'NOT_FOUND',
    /** No such route: the path or method is unknown to this server. */
    'ROUTE_NOT_FOUND',
  ],
  409: [
    /** The write contradicts what exists (an id or name taken, a resource in the wrong state). */
    'CONFLICT',
    'CONTACT_EXISTS',
    /** `POST /domains`: the tenant already added this domain (SPEC §20). */
    'DOMAIN_EXISTS',
    /** `POST /domains`: the tenant has as many domains as DOMAINS_MAX_PER_TENANT allows; delete one first. */
    'DOMAIN_LIMIT_REACHED',
    'IDEMPOTENCY_KEY_REUSED',
    'IDEMPOTENCY_KEY_IN_PROGRESS',
    /** The email was already handed to the provider: it can no longer be cancelled. */
    'ALREADY_SENT',
  ],
  /** `GET`/`DELETE /mcp`: the MCP server is stateless; each message is a POST (SPEC §28). */
  405: ['METHOD_NOT_ALLOWED'],
  /** `GET /events*`: the cursor is older than the stream keeps (EVENT_STREAM_DAYS, retention; SPEC §25). */
  410: ['CURSOR_EXPIRED'],
  413: ['PAYLOAD_TOO_LARGE'],
  414: ['URI_TOO_LONG'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
  429: ['RATE_LIMITED'],
  500: ['INTERNAL_ERROR'],
  503: [
    /** A data store cannot be reached; retry after `Retry-After`. */
    'UNAVAILABLE',
    /** The event log cannot take the request: nothing was accepted. */
    'LOG_UNAVAILABLE',
    /** `/ready`: a dependency does not answer, or the projector is stalled. */
    'NOT_READY',
    /** A read's `Tern-Consistent-With` position was not projected within the wait (SPEC §25). */
    'NOT_CONSISTENT_YET',
  ],
} as const;

export type ErrorStatus = keyof typeof ERROR_CODES_BY_STATUS;
/** The codes one status may carry. */
export type ErrorCodeOf<S extends ErrorStatus> = (typeof ERROR_CODES_BY_STATUS)[S][number];
export type ErrorCode = ErrorCodeOf<ErrorStatus>;

export const ERROR_STATUSES = Object.keys(ERROR_CODES_BY_STATUS).map(Number) as ErrorStatus[];
export const ERROR_CODES = Object.values(ERROR_CODES_BY_STATUS).flat() as ErrorCode[];
export const errorCodeSchema = z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]);

export const isErrorStatus = (status: number): status is ErrorStatus =>
  Object.hasOwn(ERROR_CODES_BY_STATUS, status);
export const isErrorCode = (code: unknown): code is ErrorCode =>
  typeof code === 'string' && (ERROR_CODES as readonly string[]).includes(code);

/**
 * The code of an error that names none of its own (a 4xx Fastify or a plugin raised): the first,
 * most general code of its status.
 */
export const GENERAL_ERROR_CODE: { [S in ErrorStatus]: ErrorCodeOf<S> } = {
  400: 'BAD_REQUEST',
  401: 'INVALID_CREDENTIAL',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  410: 'CURSOR_EXPIRED',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  500: 'INTERNAL_ERROR',
  503: 'UNAVAILABLE',
};

/** Error body of every 4xx/5xx (SPEC §4, Fastify's shape, with the code always present). */
export const errorBodySchema = z.object({
  statusCode: z.number().int(),
  error: z.string(),
  message: z.string(),
  code: errorCodeSchema,
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

/** The body of one status: `statusCode` that status, `code` one of its codes. */
export function errorBodySchemaFor<S extends ErrorStatus>(status: S) {
  const codes = ERROR_CODES_BY_STATUS[status] as readonly ErrorCodeOf<S>[];
  return errorBodySchema.extend({
    statusCode: z.literal(status),
    code: z
      .enum(codes as [ErrorCodeOf<S>, ...ErrorCodeOf<S>[]])
      .meta({ description: 'Machine-readable reason (`ERROR_CODES` of @tern/contracts).' }),
  });
}
