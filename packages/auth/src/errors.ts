/**
 * Why a credential was refused. Every reason maps to 401 (SPEC §3, §4); the reason exists for
 * logs and for the optional `code` field of the error body.
 */
export const AUTH_ERROR_REASONS = [
  'invalid_token', // not a readable JWT, or an unreadable claim set
  'invalid_signature', // signature missing or wrong
  'invalid_algorithm', // `alg` not allowed for the configured key (`none`, HS256 against a public key…)
  'expired', // `exp` is past
  'not_yet_valid', // `nbf` is in the future
  'missing_exp', // no `exp` claim
  'lifetime_too_long', // `exp` further ahead than the verifier's lifetime cap (JWT_MAX_LIFETIME_DAYS)
  'missing_tenant', // no `tenantId` claim
  'invalid_claims', // a claim has the wrong shape (tenant id, role, sub, exp type)
  'unknown_key', // JWKS mode: no key with the token's `kid`
  'jwks_unavailable', // JWKS mode: the key set could not be fetched and none is cached
] as const;
export type AuthErrorReason = (typeof AUTH_ERROR_REASONS)[number];

/**
 * A refused credential. Carries `statusCode: 401` so the shared Fastify error handler answers
 * it as-is, and `code` (= the reason) which it copies into the body.
 */
export class AuthError extends Error {
  readonly statusCode = 401;
  readonly code: AuthErrorReason;

  constructor(
    readonly reason: AuthErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AuthError';
    this.code = reason;
  }
}

export const isAuthError = (error: unknown): error is AuthError => error instanceof AuthError;
