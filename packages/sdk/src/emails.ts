import type { ClientDeps, Send, SendSpec } from './transport.js';
import type {
  BatchEmailResponse,
  CancelEmailResponse,
  ConsistentReadOptions,
  EmailDetail,
  RequestOptions,
  SendEmailParams,
  SendEmailResponse,
  SendOptions,
} from './types.js';

/** Sending (SPEC §11); needs a key with `email:send` (send, batch) or `email:read` (get, cancel). */
export interface EmailsApi {
  /** `POST /emails/send` → `{ id }` once queued. Retries reuse one Idempotency-Key, so a retry never sends twice. */
  send(email: SendEmailParams, options?: SendOptions): Promise<SendEmailResponse>;
  /** `POST /emails/batch` (1..100) → `{ data: [{ id }] }` in input order. */
  batch(emails: SendEmailParams[], options?: SendOptions): Promise<BatchEmailResponse>;
  /**
   * `GET /emails/:id`: the log entry, details and timeline. `consistentWith` (a send's `position`)
   * makes the read wait until that send is projected: never a 404 for an email just accepted.
   */
  get(id: string, options?: ConsistentReadOptions): Promise<EmailDetail>;
  /** `POST /emails/:id/cancel`: a scheduled email → `{ id, status: 'CANCELLED' }`; 409 once handed to the provider. */
  cancel(id: string, options?: RequestOptions): Promise<CancelEmailResponse>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function createEmailsApi(send: Send, deps: Pick<ClientDeps, 'random'>): EmailsApi {
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

  return {
    send: (email, options = {}) =>
      send('/emails/send', {}, postJson(email, isIdResponse, idempotencyHeader(options)), options),
    batch: (list, options = {}) =>
      send('/emails/batch', {}, postJson(list, isBatchResponse, idempotencyHeader(options)), options),
    get: (id, options = {}) =>
      send(
        emailPath(id),
        {},
        {
          method: 'GET',
          read: 'json',
          check: isEmailDetail,
          ...(options.consistentWith ? { headers: { 'Tern-Consistent-With': options.consistentWith } } : {}),
        },
        options,
      ),
    cancel: (id, options = {}) =>
      send(`${emailPath(id)}/cancel`, {}, postJson(undefined, isCancelResponse), options),
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
