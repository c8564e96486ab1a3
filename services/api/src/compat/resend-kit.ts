// What the `/compat/resend` route modules share: Resend's error and how Tern's refusals map to it,
// the call of Tern's own route with the caller's credential, and the 200 answer.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export type Json = Record<string, unknown>;

/** Resend's error body: `{ statusCode, name, message }`. */
export class ResendError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

export const validation = (message: string) => new ResendError(422, 'validation_error', message);

/** Tern's error answer as Resend's (status and `name` from Resend's list of error types). */
export function fromTern(status: number, body: string): ResendError {
  let parsed: { message?: string; code?: string } = {};
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    // not JSON
  }
  const message = parsed.message ?? 'Request failed';
  const code = parsed.code ?? '';
  if (status === 400 && code === 'DOMAIN_NOT_VERIFIED')
    return new ResendError(403, 'validation_error', message);
  if (status === 400) return validation(message);
  if (status === 401)
    return code === 'MISSING_CREDENTIAL'
      ? new ResendError(401, 'missing_api_key', 'Missing API key in the authorization header')
      : new ResendError(403, 'invalid_api_key', 'API key is invalid');
  if (status === 403) return new ResendError(401, 'restricted_api_key', message);
  if (status === 404) return new ResendError(404, 'not_found', message);
  if (status === 409 && code === 'IDEMPOTENCY_KEY_REUSED')
    return new ResendError(409, 'invalid_idempotent_request', message);
  if (status === 409 && code === 'IDEMPOTENCY_KEY_IN_PROGRESS')
    return new ResendError(409, 'concurrent_idempotent_requests', message);
  if (status === 409) return validation(message);
  if (status === 413) return new ResendError(413, 'validation_error', message);
  if (status === 429) return new ResendError(429, 'rate_limit_exceeded', message);
  return new ResendError(Math.max(status, 500), 'application_error', message);
}

/**
 * Calls Tern's route with the caller's credential; throws Resend's error on a refusal. `root` is
 * the compat plugin's instance: injected requests go through Tern's own routes and their hooks.
 */
export function ternCaller(root: FastifyInstance) {
  return async function tern(
    request: FastifyRequest,
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    ok = [200, 201, 202],
  ) {
    const headers: Record<string, string> = {};
    const { authorization } = request.headers;
    if (typeof authorization === 'string') headers.authorization = authorization;
    const idempotency = request.headers['idempotency-key'];
    if (typeof idempotency === 'string') headers['idempotency-key'] = idempotency;
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const res = await root.inject({
      method,
      url,
      headers,
      ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
      remoteAddress: request.ip,
    });
    if (!ok.includes(res.statusCode)) throw fromTern(res.statusCode, res.body);
    const retry = res.headers['retry-after'];
    return { status: res.statusCode, body: (res.body === '' ? {} : res.json()) as Json, retryAfter: retry };
  };
}

export type TernCall = ReturnType<typeof ternCaller>;

export const send = (reply: FastifyReply, body: unknown) => reply.status(200).send(body);
export const idParam = (request: FastifyRequest) => encodeURIComponent((request.params as { id: string }).id);
