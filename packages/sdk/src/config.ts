import {
  API_KEY_ENV,
  BASE_URL_ENV,
  DEFAULT_BASE_URL,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_RETRY_BASE_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
} from './constants.js';
import { TernConfigError } from './errors.js';

/** The subset of `fetch` the SDK calls; the global `fetch` (Node ≥ 18, browsers) fits it. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface TernOptions {
  /** API key (`tern_…`) with the `email:read` scope. Default: `process.env.TERN_API_KEY`. */
  apiKey?: string;
  /** Where the Tern API listens. Default: `process.env.TERN_BASE_URL`, else `http://127.0.0.1:3000`. */
  baseUrl?: string;
  /** Limit of one attempt (request and body), in ms. Default 10 000. */
  timeoutMs?: number;
  /** Retries after the first attempt, on 429, 5xx, network errors and timeouts. Default 2. */
  maxRetries?: number;
  /** Ceiling of the first back-off; it doubles per retry (full jitter). Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Ceiling of any wait between attempts, including a server's `Retry-After`. Default 30 000 ms. */
  maxRetryDelayMs?: number;
  /** The `fetch` to use. Default: the global `fetch`. */
  fetch?: FetchLike;
}

export interface ResolvedConfig {
  apiKey: string;
  baseUrl: string;
  timeoutMs: number;
  maxRetries: number;
  retryBaseDelayMs: number;
  maxRetryDelayMs: number;
  fetch: FetchLike;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The SDK's entry point is the user's program, so reading its environment here is the norm. */
export function readProcessEnv(): Env {
  return typeof process === 'undefined' || process.env == null ? {} : process.env;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

function number(
  name: string,
  value: number | undefined,
  fallback: number,
  rule: { min: number; integer: boolean },
): number {
  if (value === undefined) return fallback;
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= rule.min &&
    (!rule.integer || Number.isInteger(value));
  if (!ok) {
    throw new TernConfigError(
      `${name} must be ${rule.integer ? 'an integer' : 'a number'} ≥ ${rule.min}, got ${String(value)}`,
    );
  }
  return value;
}

/** Options + environment → a complete, checked configuration; throws `TernConfigError`. */
export function resolveConfig(options: TernOptions, env: Env): ResolvedConfig {
  if (options.apiKey !== undefined && typeof options.apiKey !== 'string') {
    throw new TernConfigError('apiKey must be a string');
  }
  const apiKey = nonEmpty(options.apiKey) ?? nonEmpty(env[API_KEY_ENV]);
  if (apiKey === undefined) {
    throw new TernConfigError(
      `Missing API key: pass init({ apiKey }) or set the ${API_KEY_ENV} environment variable`,
    );
  }

  const rawBaseUrl = nonEmpty(options.baseUrl) ?? nonEmpty(env[BASE_URL_ENV]) ?? DEFAULT_BASE_URL;
  let parsed: URL;
  try {
    parsed = new URL(rawBaseUrl);
  } catch {
    throw new TernConfigError(`baseUrl must be an absolute http(s) URL, got ${JSON.stringify(rawBaseUrl)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TernConfigError(`baseUrl must be an absolute http(s) URL, got ${JSON.stringify(rawBaseUrl)}`);
  }
  if (parsed.search !== '' || parsed.hash !== '') {
    throw new TernConfigError('baseUrl must not carry a query or a fragment');
  }
  // Keep a path prefix (an API mounted under /tern), drop trailing slashes so joins are clean.
  const baseUrl = `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');

  // The global is wrapped, not stored: browsers throw "Illegal invocation" when `fetch` is
  // called as a method of another object.
  const fetchFn: FetchLike | undefined =
    options.fetch ?? (typeof fetch === 'function' ? (url, init) => fetch(url, init) : undefined);
  if (typeof fetchFn !== 'function') {
    throw new TernConfigError('No global fetch: use Node.js ≥ 18 or pass init({ fetch })');
  }

  return {
    apiKey,
    baseUrl,
    timeoutMs: number('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS, { min: 1, integer: false }),
    maxRetries: number('maxRetries', options.maxRetries, DEFAULT_MAX_RETRIES, { min: 0, integer: true }),
    retryBaseDelayMs: number('retryBaseDelayMs', options.retryBaseDelayMs, DEFAULT_RETRY_BASE_DELAY_MS, {
      min: 0,
      integer: false,
    }),
    maxRetryDelayMs: number('maxRetryDelayMs', options.maxRetryDelayMs, DEFAULT_MAX_RETRY_DELAY_MS, {
      min: 0,
      integer: false,
    }),
    fetch: fetchFn,
  };
}
