import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** An error that becomes a 4xx/5xx body of SPEC §4: `{ statusCode, error, message, ...extra }`. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const httpError = (
  statusCode: number,
  message: string,
  extra?: Record<string, unknown>,
  headers?: Record<string, string>,
) => new HttpError(statusCode, message, extra, headers);

export function errorBody(statusCode: number, message: string, extra: Record<string, unknown> = {}) {
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

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

/**
 * A store that cannot be reached (connection refused or dropped, Postgres class 08 or admin
 * shutdown 57P0x): the request may succeed later, so it is a 503, not a 500.
 */
export function isDependencyUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || /^08|^57P0/.test(code))) return true;
    const message = (e as { message?: unknown }).message;
    if (
      typeof message === 'string' &&
      /Connection terminated|connection timeout|socket hang up/i.test(message)
    ) {
      return true;
    }
  }
  return false;
}

/**
 * The one error handler of every service: client mistakes keep their 4xx and a clear message,
 * anything else is logged and answered as a bare 500 (its message hidden).
 */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof HttpError) {
      reply.headers(error.headers);
      return reply.status(error.statusCode).send(errorBody(error.statusCode, error.message, error.extra));
    }
    // Postgres refusing the characters of a value (U+0000 22P05, bad encoding 22021) is the
    // client's mistake: 400, never 500 (issue 9, item 5).
    if ((error as { code?: unknown }).code === '22P05' || (error as { code?: unknown }).code === '22021') {
      return reply
        .status(400)
        .send(
          errorBody(
            400,
            'The request contains characters that cannot be stored (U+0000 or invalid Unicode)',
            { code: 'INVALID_CHARACTERS' },
          ),
        );
    }
    if (error.validation) {
      return reply.status(400).send(errorBody(400, validationMessage(error), { code: 'FST_ERR_VALIDATION' }));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply
        .status(status)
        .send(errorBody(status, error.message, error.code ? { code: error.code } : {}));
    }
    request.log.error({ err: error }, 'request failed');
    if (isDependencyUnavailable(error)) {
      reply.header('retry-after', '5');
      return reply
        .status(503)
        .send(errorBody(503, 'Service Unavailable: a data store cannot be reached, retry later'));
    }
    const code = status >= 500 && status < 600 ? status : 500;
    return reply
      .status(code)
      .send(errorBody(code, code === 503 ? 'Service Unavailable' : 'Internal Server Error'));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}
