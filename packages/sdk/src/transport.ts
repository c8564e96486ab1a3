import type { ResolvedConfig } from './config.js';
import { TernApiError, TernTimeoutError } from './errors.js';
import { type BackoffPolicy, isRetryableStatus, parseRetryAfter, retryDelayMs } from './retry.js';
import type { RequestOptions } from './types.js';

// How one call goes over the wire: the credential, the timeout, the retries and the errors.
// `createTernClient` (client.ts) builds one `Send` and hands it to every resource module.

/** What the client needs from the outside world besides fetch; replaced in tests. */
export interface ClientDeps {
  /** Resolves after `ms`, rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal: AbortSignal | undefined): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
  /** Epoch ms, for `Retry-After` dates. */
  now(): number;
}

export const defaultDeps: ClientDeps = {
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
  random: Math.random,
  now: Date.now,
};

/** What one call sends and how its 2xx body is read. */
export type SendSpec<T> = {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  body?: string;
  contentType?: string;
  /** Extra request headers (e.g. `Idempotency-Key`). */
  headers?: Record<string, string>;
  /**
   * The server answers a repeat of this write as it answered the first (an Idempotency-Key, or a
   * cancel that is already done), so it is retried like a GET: on 429, 5xx, timeouts, network errors.
   */
  idempotent?: boolean;
} & (
  | { read: 'json'; check: (value: unknown) => value is T }
  | { read: 'text' }
  | { read: 'bytes' }
  | { read: 'none' }
);

/** Sends one call (with the client's credential, timeout and retry policy); what resources use. */
export type Send = <T>(
  path: string,
  query: Record<string, number | string | undefined>,
  spec: SendSpec<T>,
  options: RequestOptions,
) => Promise<T>;

type Attempt<T> = { ok: true; value: T } | { ok: false; error: TernApiError; retryable: boolean };

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function abortedError(signal: AbortSignal): TernApiError {
  return new TernApiError({ status: 0, code: 'ABORTED', message: 'Request aborted', cause: signal.reason });
}

/** Build the error of a non-2xx answer from its status, headers and body text. */
export function errorFromResponse(
  status: number,
  statusText: string,
  headers: { get(name: string): string | null },
  text: string,
  nowMs: number,
): TernApiError {
  const parsed = parseJson(text);
  const body: unknown = parsed.ok ? parsed.value : text === '' ? undefined : text;
  const serverMessage = isRecord(body) && typeof body.message === 'string' ? body.message : undefined;
  return new TernApiError({
    status,
    body,
    message: serverMessage ?? (`HTTP ${status} ${statusText}`.trim() || `HTTP ${status}`),
    code: isRecord(body) && typeof body.code === 'string' ? body.code : undefined,
    retryAfterMs: parseRetryAfter(headers.get('retry-after'), nowMs),
  });
}

/** The `Send` of a client: its credential, timeout and retry policy over `config.fetch`. */
export function createSend(config: ResolvedConfig, deps: ClientDeps): Send {
  const policy: BackoffPolicy = { baseDelayMs: config.retryBaseDelayMs, maxDelayMs: config.maxRetryDelayMs };
  const headers = { Accept: 'application/json', Authorization: `Bearer ${config.apiKey}` };
  const doFetch = config.fetch;

  async function attempt<T>(
    url: string,
    spec: SendSpec<T>,
    signal: AbortSignal | undefined,
  ): Promise<Attempt<T>> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, config.timeoutMs);
    const forwardAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', forwardAbort, { once: true });
    try {
      const res = await doFetch(url, {
        method: spec.method,
        headers: {
          ...headers,
          ...(spec.body === undefined ? {} : { 'Content-Type': spec.contentType ?? 'application/json' }),
          ...spec.headers,
        },
        ...(spec.body === undefined ? {} : { body: spec.body }),
        signal: controller.signal,
      });
      // The body is read under the same timer: a server that stalls mid-body also times out.
      if (spec.read === 'bytes' && res.status >= 200 && res.status < 300)
        return { ok: true, value: new Uint8Array(await res.arrayBuffer()) as T };
      const text = await res.text();
      if (res.status >= 200 && res.status < 300) {
        if (spec.read === 'text') return { ok: true, value: text as T };
        if (spec.read !== 'json') return { ok: true, value: undefined as T };
        const parsed = parseJson(text);
        if (parsed.ok && spec.check(parsed.value)) return { ok: true, value: parsed.value };
        const error = new TernApiError({
          status: res.status,
          code: 'INVALID_RESPONSE',
          message: 'The server answered with a body the SDK does not understand',
          body: parsed.ok ? parsed.value : text,
        });
        return { ok: false, error, retryable: false };
      }
      const error = errorFromResponse(res.status, res.statusText, res.headers, text, deps.now());
      return { ok: false, error, retryable: isRetryableStatus(res.status) };
    } catch (cause) {
      if (signal?.aborted) return { ok: false, error: abortedError(signal), retryable: false };
      if (timedOut)
        return { ok: false, error: new TernTimeoutError(config.timeoutMs, cause), retryable: true };
      const message = `Network error: ${cause instanceof Error ? cause.message : String(cause)}`;
      const error = new TernApiError({ status: 0, code: 'NETWORK_ERROR', message, cause });
      return { ok: false, error, retryable: true };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forwardAbort);
    }
  }

  /**
   * One call, retried with back-off on 429, 5xx, timeouts and network errors when it is a GET or
   * an idempotent write; any other write is retried only on 429 (the server refused it before doing
   * anything), so a create is never sent twice by the SDK.
   */
  async function send<T>(
    path: string,
    query: Record<string, number | string | undefined>,
    spec: SendSpec<T>,
    options: RequestOptions,
  ): Promise<T> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) search.set(name, String(value));
    const qs = search.toString();
    const url = `${config.baseUrl}${path}${qs === '' ? '' : `?${qs}`}`;
    const { signal } = options;

    for (let retry = 0; ; retry++) {
      if (signal?.aborted) throw abortedError(signal);
      const result = await attempt(url, spec, signal);
      if (result.ok) return result.value;
      const retryable =
        spec.method === 'GET' || spec.idempotent === true ? result.retryable : result.error.status === 429;
      if (!retryable || retry >= config.maxRetries) throw result.error;
      try {
        await deps.sleep(retryDelayMs(retry, result.error.retryAfterMs, policy, deps.random), signal);
      } catch {
        throw signal ? abortedError(signal) : result.error;
      }
    }
  }

  return send;
}
