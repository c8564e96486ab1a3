import { type CampaignsApi, createCampaignsApi } from './campaigns.js';
import { type ResolvedConfig, readProcessEnv, resolveConfig, type TernOptions } from './config.js';
import { ITERATOR_PAGE_LIMIT } from './constants.js';
import { type ContactsApi, createContactsApi } from './contacts.js';
import { TernApiError, TernTimeoutError } from './errors.js';
import { type BackoffPolicy, isRetryableStatus, parseRetryAfter, retryDelayMs } from './retry.js';
import { createSequencesApi, type SequencesApi } from './sequences.js';
import type {
  BatchEmailResponse,
  CancelEmailResponse,
  EmailDetail,
  EmailLogEntry,
  GetLogsParams,
  IterateLogsParams,
  LogsResponse,
  RequestOptions,
  SendEmailParams,
  SendEmailResponse,
  SendOptions,
} from './types.js';
import { createWebhooksApi, type WebhooksApi } from './webhooks.js';

export interface TernClient {
  /** The resolved API origin (and path prefix), without a trailing slash. */
  readonly baseUrl: string;
  /** One page of `GET /emails/logs`, newest first, exactly as the endpoint returns it. */
  getLogs(params?: GetLogsParams, options?: RequestOptions): Promise<LogsResponse>;
  /**
   * Every log entry, newest first, walking pages 1..totalPages. Entries that move to a later page
   * while iterating (new emails arrive on top) are yielded once: ids already seen are skipped.
   */
  logs(params?: IterateLogsParams, options?: RequestOptions): AsyncGenerator<EmailLogEntry, void, undefined>;
  /** Contacts and audiences (`contacts:read` / `contacts:write`). */
  readonly contacts: ContactsApi;
  /** Outgoing webhook endpoints, their deliveries and replays (key scope `webhooks:manage`). */
  readonly webhooks: WebhooksApi;
  /** Campaigns (`campaigns:read` / `campaigns:write`). */
  readonly campaigns: CampaignsApi;
  /** Sequences and enrollments (`sequences:read` / `sequences:write`). */
  readonly sequences: SequencesApi;
  /** Sending (SPEC §11); needs a key with `email:send` (send, batch) or `email:read` (get, cancel). */
  readonly emails: {
    /** `POST /emails/send` → `{ id }` once queued. Retries reuse one Idempotency-Key, so a retry never sends twice. */
    send(email: SendEmailParams, options?: SendOptions): Promise<SendEmailResponse>;
    /** `POST /emails/batch` (1..100) → `{ data: [{ id }] }` in input order. */
    batch(emails: SendEmailParams[], options?: SendOptions): Promise<BatchEmailResponse>;
    /** `GET /emails/:id`: the log entry, details and timeline. */
    get(id: string, options?: RequestOptions): Promise<EmailDetail>;
    /** `POST /emails/:id/cancel`: a scheduled email → `{ id, status: 'CANCELLED' }`; 409 once handed to the provider. */
    cancel(id: string, options?: RequestOptions): Promise<CancelEmailResponse>;
  };
}

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

/**
 * Create a client. `apiKey` falls back to `TERN_API_KEY`, `baseUrl` to `TERN_BASE_URL`, then
 * `http://127.0.0.1:3000`. Throws `TernConfigError` at once when no key is found.
 */
export function init(options: TernOptions = {}): TernClient {
  return createTernClient(resolveConfig(options, readProcessEnv()), defaultDeps);
}

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
} & ({ read: 'json'; check: (value: unknown) => value is T } | { read: 'text' } | { read: 'none' });

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

function isLogsResponse(value: unknown): value is LogsResponse {
  return (
    isRecord(value) &&
    Array.isArray(value.data) &&
    isRecord(value.meta) &&
    typeof value.meta.page === 'number' &&
    typeof value.meta.limit === 'number' &&
    typeof value.meta.total === 'number' &&
    typeof value.meta.totalPages === 'number'
  );
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

export function createTernClient(config: ResolvedConfig, deps: ClientDeps): TernClient {
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
      const text = await res.text();
      if (res.status >= 200 && res.status < 300) {
        if (spec.read === 'text') return { ok: true, value: text as T };
        if (spec.read === 'none') return { ok: true, value: undefined as T };
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

  async function get<T>(
    path: string,
    query: Record<string, number | string | undefined>,
    check: (value: unknown) => value is T,
    options: RequestOptions,
  ): Promise<T> {
    return send(path, query, { method: 'GET', read: 'json', check }, options);
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

  function getLogs(params: GetLogsParams = {}, options: RequestOptions = {}): Promise<LogsResponse> {
    return get('/emails/logs', { page: params.page, limit: params.limit }, isLogsResponse, options);
  }

  async function* logs(
    params: IterateLogsParams = {},
    options: RequestOptions = {},
  ): AsyncGenerator<EmailLogEntry, void, undefined> {
    const limit = params.limit ?? ITERATOR_PAGE_LIMIT;
    const seen = new Set<string>();
    for (let page = 1; ; page++) {
      const { data, meta } = await getLogs({ page, limit }, options);
      for (const entry of data) {
        if (seen.has(entry.id)) continue;
        seen.add(entry.id);
        yield entry;
      }
      // totalPages is re-read on every page, so entries added meanwhile extend the walk.
      if (data.length === 0 || page >= meta.totalPages) return;
    }
  }

  /** One key per call, reused by its retries: the server then sends once whatever happens to an answer. */
  const idempotencyHeader = (options: SendOptions) => ({
    'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey(deps.random),
  });
  const emailPath = (id: string) => `/emails/${encodeURIComponent(id)}`;
  const postJson = <T>(
    body: unknown,
    check: (value: unknown) => value is T,
    headers?: Record<string, string>,
  ): SendSpec<T> => ({
    method: 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(headers === undefined ? {} : { headers }),
    idempotent: true,
    read: 'json',
    check,
  });

  const emails: TernClient['emails'] = {
    send: (email, options = {}) =>
      send('/emails/send', {}, postJson(email, isIdResponse, idempotencyHeader(options)), options),
    batch: (list, options = {}) =>
      send('/emails/batch', {}, postJson(list, isBatchResponse, idempotencyHeader(options)), options),
    get: (id, options = {}) => get(emailPath(id), {}, isEmailDetail, options),
    cancel: (id, options = {}) =>
      send(`${emailPath(id)}/cancel`, {}, postJson(undefined, isCancelResponse), options),
  };

  return {
    baseUrl: config.baseUrl,
    getLogs,
    logs,
    contacts: createContactsApi(send),
    emails,
    webhooks: createWebhooksApi(send),
    campaigns: createCampaignsApi(send),
    sequences: createSequencesApi(send),
  };
}

/** `sdk_` + 32 random base62 characters. */
function newIdempotencyKey(random: () => number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let key = 'sdk_';
  for (let i = 0; i < 32; i++) key += alphabet[Math.floor(random() * alphabet.length)];
  return key;
}

function isIdResponse(value: unknown): value is SendEmailResponse {
  return isRecord(value) && typeof value.id === 'string';
}

function isBatchResponse(value: unknown): value is BatchEmailResponse {
  return isRecord(value) && Array.isArray(value.data) && value.data.every(isIdResponse);
}

function isEmailDetail(value: unknown): value is EmailDetail {
  return (
    isRecord(value) &&
    typeof value.id === 'string' &&
    typeof value.status === 'string' &&
    Array.isArray(value.events)
  );
}

function isCancelResponse(value: unknown): value is CancelEmailResponse {
  return isRecord(value) && typeof value.id === 'string' && value.status === 'CANCELLED';
}
