import { MISSING_SCOPE_MESSAGE } from './constants.js';

/** The error codes the SDK itself assigns when no HTTP answer could be read. */
export type TernErrorCode = 'TIMEOUT' | 'NETWORK_ERROR' | 'ABORTED' | 'INVALID_RESPONSE';

export interface TernApiErrorInit {
  status: number;
  message: string;
  body?: unknown;
  code?: string | undefined;
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/**
 * Every failed call rejects with this class. `status` is the HTTP status, or 0 when no answer
 * was received (network error, timeout, abort: then `code` says which and `cause` holds the
 * underlying error). `message` is the server's `message` field when it sent one.
 */
export class TernApiError extends Error {
  override readonly name: string = 'TernApiError';
  readonly status: number;
  /** The parsed response body (`{ statusCode, error, message, code? }`), or its text, or undefined. */
  readonly body: unknown;
  /** The body's `code`, or the SDK's own code when `status` is 0. */
  readonly code: string | undefined;
  /** The server's `Retry-After`, in ms, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(init: TernApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.body = init.body;
    this.code = init.code;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** 401: the key is missing, unknown, revoked or expired. */
  get isUnauthorized(): boolean {
    return this.status === 401;
  }

  /** 403 because the key lacks the scope the endpoint needs (`email:read` for logs). */
  get isMissingScope(): boolean {
    return this.status === 403 && this.message === MISSING_SCOPE_MESSAGE;
  }

  /** 429: rate limited; retried automatically before this is thrown. */
  get isRateLimited(): boolean {
    return this.status === 429;
  }

  /** No HTTP answer: network failure, timeout or abort. */
  get isNetworkError(): boolean {
    return this.status === 0;
  }
}

/** A single attempt took longer than `timeoutMs` (thrown once retries are exhausted). */
export class TernTimeoutError extends TernApiError {
  override readonly name: string = 'TernTimeoutError';
  readonly timeoutMs: number;

  constructor(timeoutMs: number, cause?: unknown) {
    super({ status: 0, code: 'TIMEOUT', message: `Request timed out after ${timeoutMs} ms`, cause });
    this.timeoutMs = timeoutMs;
  }
}

/** Bad options given to `init` (e.g. no API key): thrown synchronously, never from a request. */
export class TernConfigError extends Error {
  override readonly name: string = 'TernConfigError';
}

/**
 * `instanceof` fails when an app loads both the ESM and the CJS build of the SDK (two copies of
 * the class), so callers may test the name instead.
 */
export function isTernApiError(err: unknown): err is TernApiError {
  return (
    err instanceof TernApiError ||
    (err instanceof Error &&
      (err.name === 'TernApiError' || err.name === 'TernTimeoutError') &&
      typeof (err as { status?: unknown }).status === 'number')
  );
}
