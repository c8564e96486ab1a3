import { ROLES, type Role, tenantIdSchema } from '@tern/contracts';
import { z } from 'zod';
import { AuthError, type AuthErrorReason } from './errors.js';

// The claims of a dashboard JWT once its signature is verified: their shape, the checks against
// the clock, and the `AuthError` of each way a token fails.

/** The claims of a dashboard session (SPEC §3), once verified. */
export interface DashboardClaims {
  tenantId: string;
  sub?: string;
  role: Role;
  /** Seconds since the epoch, as in the token. */
  exp: number;
}

/** fast-jwt's `code` of a thrown error (compared with its codes only: any other value maps to `invalid_token`). */
function tokenErrorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

export function toAuthError(error: unknown): AuthError {
  if (error instanceof AuthError) return error;
  const code = tokenErrorCode(error);
  const reason: AuthErrorReason =
    code === 'FAST_JWT_INVALID_SIGNATURE' || code === 'FAST_JWT_MISSING_SIGNATURE'
      ? 'invalid_signature'
      : code === 'FAST_JWT_INVALID_ALGORITHM' || code === 'FAST_JWT_INVALID_KEY'
        ? 'invalid_algorithm'
        : 'invalid_token';
  return new AuthError(reason, messageFor(reason), { cause: error });
}

function messageFor(reason: AuthErrorReason): string {
  switch (reason) {
    case 'invalid_token':
      return 'Invalid token';
    case 'invalid_signature':
      return 'Invalid token signature';
    case 'invalid_algorithm':
      return 'Token algorithm not allowed';
    case 'expired':
      return 'Token expired';
    case 'not_yet_valid':
      return 'Token not yet valid';
    case 'missing_exp':
      return 'Token has no exp claim';
    case 'lifetime_too_long':
      return 'Token lifetime too long: exp is further ahead than this server accepts';
    case 'missing_tenant':
      return 'Token has no tenantId claim';
    case 'invalid_claims':
      return 'Token claims are invalid';
    case 'unknown_key':
      return 'Token signed by an unknown key';
    case 'jwks_unavailable':
      return 'Token signing keys unavailable';
  }
  // No default: the switch is exhaustive, and a new reason without a message fails to compile (TS2366).
}

export const fail = (reason: AuthErrorReason, message = messageFor(reason)) => new AuthError(reason, message);

const claimsSchema = z.object({
  tenantId: tenantIdSchema,
  sub: z.string().min(1).max(256).optional(),
  role: z.enum(ROLES).default('member'),
  exp: z.number().finite(),
  nbf: z.number().finite().optional(),
});

export type Claims = z.infer<typeof claimsSchema>;

/** The claims of a verified payload, before any check against the clock. */
export function parseClaims(payload: unknown): Claims {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw fail('invalid_token');
  const raw = payload as Record<string, unknown>;
  if (raw.exp === undefined || raw.exp === null) throw fail('missing_exp');
  if (raw.tenantId === undefined || raw.tenantId === null) throw fail('missing_tenant');
  const parsed = claimsSchema.safeParse(raw);
  if (!parsed.success) {
    // Every issue has a path: the payload is an object (checked above), so only its fields can fail.
    const fields = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0])))];
    throw fail('invalid_claims', `Token claims are invalid: ${fields.join(', ')}`);
  }
  return parsed.data;
}

/** The time checks of the claims, against the injected clock: run on every use of a token. */
export function checkClaims(
  claims: Claims,
  nowMs: number,
  toleranceMs: number,
  maxLifetimeMs: number,
): DashboardClaims {
  const { tenantId, sub, role, exp, nbf } = claims;
  // RFC 7519: the token must not be accepted on or after `exp`.
  if (nowMs >= exp * 1000 + toleranceMs) throw fail('expired');
  if (exp * 1000 - nowMs > maxLifetimeMs + toleranceMs) throw fail('lifetime_too_long');
  if (nbf !== undefined && nowMs < nbf * 1000 - toleranceMs) throw fail('not_yet_valid');
  return sub === undefined ? { tenantId, role, exp } : { tenantId, sub, role, exp };
}
