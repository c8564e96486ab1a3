import { STATUS_CODES } from 'node:http';
import {
  ERROR_CODES_BY_STATUS,
  type ErrorBody,
  type ErrorCode,
  type ErrorCodeOf,
  type ErrorStatus,
  GENERAL_ERROR_CODE,
  isErrorCode,
  isErrorStatus,
} from '@tern/contracts';
import { classifyStoreError, isUnstorableCharacterError } from '@tern/stores/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The fields of an error body beyond SPEC §4's three: the code, always, and any a route adds. */
export type ErrorExtra<S extends ErrorStatus> = { code: ErrorCodeOf<S> } & Record<string, unknown>;

/** An error that becomes a 4xx/5xx body of SPEC §4: `{ statusCode, error, message, code, ...extra }`. */
export class HttpError<S extends ErrorStatus = ErrorStatus> extends Error {
  constructor(
    readonly statusCode: S,
    message: string,
    readonly extra: ErrorExtra<S>,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** An error answer; its code must be one of its status (`ERROR_CODES_BY_STATUS` of @tern/contracts). */
export const httpError = <S extends ErrorStatus>(
  statusCode: S,
  message: string,
  extra: ErrorExtra<S>,
  headers?: Record<string, string>,
) => new HttpError(statusCode, message, extra, headers);

/**
 * Runs an append to the event log; a log that cannot take it (`EventLogUnavailableError` of
 * @tern/event-log, recognised by its name: this package sits below that one) is answered 503
 * `LOG_UNAVAILABLE` with Retry-After — nothing was `done` ("queued" by the send routes, "accepted"
 * by ingest), the client retries. Any other error goes on as it was.
 */
export async function appendOr503<T>(append: () => Promise<T>, done: 'queued' | 'accepted'): Promise<T> {
  try {
    return await append();
  } catch (error) {
    if (error instanceof Error && error.name === 'EventLogUnavailableError')
      throw httpError(
        503,
        `Event log unavailable: nothing was ${done}, retry later`,
        { code: 'LOG_UNAVAILABLE' },
        { 'retry-after': '5' },
      );
    throw error;
  }
}

export function errorBody<S extends ErrorStatus>(
  statusCode: S,
  message: string,
  extra: ErrorExtra<S>,
): ErrorBody & Record<string, unknown> {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message, ...extra };
}

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  params?: { issue?: { path?: PropertyKey[]; message?: string } };
}

/** One readable line naming the field, for Fastify/zod validation errors. */
function validationMessage(error: FastifyError): string {
  const context = error.validationContext ?? 'request';
  const issues = (error.validation ?? []) as ValidationIssue[];
  const parts = issues.map((issue) => {
    const path = (issue.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
    const field = path ? `${context}.${path}` : context;
    return `${field}: ${issue.message ?? 'is invalid'}`;
  });
  return parts.length > 0 ? parts.join('; ') : error.message;
}

/**
 * The body of a 4xx raised by Fastify or a plugin (bad JSON, body too large, media type): its own
 * code where that is one of its status's in the contract, else the status's general code.
 */
function clientErrorBody(status: number, error: FastifyError): ErrorBody {
  const codes: readonly string[] = isErrorStatus(status) ? ERROR_CODES_BY_STATUS[status] : [];
  const code: ErrorCode =
    isErrorCode(error.code) && codes.includes(error.code)
      ? error.code
      : isErrorStatus(status)
        ? GENERAL_ERROR_CODE[status]
        : 'BAD_REQUEST';
  return { statusCode: status, error: STATUS_CODES[status] ?? 'Error', message: error.message, code };
}

/**
 * Fastify's options for the requests it refuses before any route or hook runs (`frameworkErrors`):
 * a path that does not decode (`/%`) or a parameter past `maxParamLength`. Fastify's own answer
 * carries a code outside the contract (`FST_ERR_BAD_URL`) and no `nosniff`; this one is the
 * contract's (400 `BAD_REQUEST`, 414 `URI_TOO_LONG`), with `nosniff` as on every other answer.
 * Part of `TERN_FASTIFY_OPTIONS`.
 */
export const FRAMEWORK_ERRORS = {
  frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
    const status = error.statusCode ?? 400;
    reply.header('x-content-type-options', 'nosniff').status(status).send(clientErrorBody(status, error));
  },
} as const;

/**
 * The one error handler of every service: client mistakes keep their 4xx and a clear message;
 * an error of a store is answered by what it means (`classifyStoreError`): unreachable → 503
 * with Retry-After, refused data → 400, anything else is logged and answered as a bare 500
 * (its message hidden). Every body carries a `code` of the contract.
 */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof HttpError) {
      reply.headers(error.headers);
      return reply.status(error.statusCode).send(errorBody(error.statusCode, error.message, error.extra));
    }
    if (error.validation) {
      return reply.status(400).send(errorBody(400, validationMessage(error), { code: 'FST_ERR_VALIDATION' }));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send(clientErrorBody(status, error));
    }
    switch (classifyStoreError(error)) {
      case 'data':
        // A store refusing a value of the request is the client's mistake: 400, never 500
        // (issue 9, item 5).
        return reply.status(400).send(
          isUnstorableCharacterError(error)
            ? errorBody(
                400,
                'The request contains characters that cannot be stored (U+0000 or invalid Unicode)',
                {
                  code: 'INVALID_CHARACTERS',
                },
              )
            : errorBody(400, 'The request contains a value that cannot be stored', { code: 'INVALID_DATA' }),
        );
      case 'unavailable':
        request.log.error({ err: error }, 'request failed: a store is unavailable');
        reply.header('retry-after', '5');
        return reply.status(503).send(
          errorBody(503, 'Service Unavailable: a data store cannot be reached, retry later', {
            code: 'UNAVAILABLE',
          }),
        );
      case 'bug':
        break;
    }
    request.log.error({ err: error }, 'request failed');
    if (status === 503)
      return reply.status(503).send(errorBody(503, 'Service Unavailable', { code: 'UNAVAILABLE' }));
    return reply.status(500).send(errorBody(500, 'Internal Server Error', { code: 'INTERNAL_ERROR' }));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(
      errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`, {
        code: 'ROUTE_NOT_FOUND',
      }),
    );
  });
}
