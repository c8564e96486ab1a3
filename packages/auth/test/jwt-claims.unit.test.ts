import { TokenError } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import { AUTH_ERROR_REASONS, AuthError, type AuthErrorReason } from '../src/errors.js';
import { fail, parseClaims, toAuthError } from '../src/jwt-claims.js';

// The claim set of a verified token and the AuthError of each refusal, below the verifier: inputs
// the verifier's own guards (fast-jwt's payload check, the header check) never let through.

function refusal(run: () => unknown): AuthError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AuthError);
    return error as AuthError;
  }
  throw new Error('expected an AuthError, nothing was thrown');
}

describe('toAuthError: whatever a verification throws becomes a 401 AuthError', () => {
  it('keeps an AuthError as it is', () => {
    const expired = fail('expired');
    expect(toAuthError(expired)).toBe(expired);
  });

  it.each([
    [
      'a missing signature',
      TokenError.codes.missingSignature,
      'invalid_signature',
      'Invalid token signature',
    ],
    ['a wrong signature', TokenError.codes.invalidSignature, 'invalid_signature', 'Invalid token signature'],
    [
      'a refused algorithm',
      TokenError.codes.invalidAlgorithm,
      'invalid_algorithm',
      'Token algorithm not allowed',
    ],
    ['an unusable key', TokenError.codes.invalidKey, 'invalid_algorithm', 'Token algorithm not allowed'],
    ['a malformed token', TokenError.codes.malformed, 'invalid_token', 'Invalid token'],
  ] as const)('maps fast-jwt’s %s to %s, keeping it as the cause', (_what, code, reason, message) => {
    const cause = new TokenError(code, 'from fast-jwt');
    const error = toAuthError(cause);
    expect(error).toBeInstanceOf(AuthError);
    expect(error.reason).toBe(reason);
    expect(error.message).toBe(message);
    expect(error.cause).toBe(cause);
  });

  it.each([
    ['a string', 'boom'],
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['an error without code', new Error('boom')],
    ['an object whose code is not a string', { code: 7 }],
  ])('maps %s to invalid_token', (_what, thrown) => {
    const error = toAuthError(thrown);
    expect(error.reason).toBe('invalid_token');
    expect(error.statusCode).toBe(401);
    expect(error.cause).toBe(thrown);
  });
});

describe('fail: one message per reason', () => {
  const messages: Record<AuthErrorReason, string> = {
    invalid_token: 'Invalid token',
    invalid_signature: 'Invalid token signature',
    invalid_algorithm: 'Token algorithm not allowed',
    expired: 'Token expired',
    not_yet_valid: 'Token not yet valid',
    missing_exp: 'Token has no exp claim',
    lifetime_too_long: 'Token lifetime too long: exp is further ahead than this server accepts',
    missing_tenant: 'Token has no tenantId claim',
    invalid_claims: 'Token claims are invalid',
    unknown_key: 'Token signed by an unknown key',
    jwks_unavailable: 'Token signing keys unavailable',
  };

  it.each(AUTH_ERROR_REASONS)('%s', (reason) => {
    const error = fail(reason);
    expect(error.reason).toBe(reason);
    expect(error.code).toBe(reason);
    expect(error.message).toBe(messages[reason]);
  });

  it('takes an explicit message over the default one', () => {
    expect(fail('invalid_claims', 'Token claims are invalid: role').message).toBe(
      'Token claims are invalid: role',
    );
  });
});

describe('parseClaims', () => {
  it.each([
    ['a string', 'acme'],
    ['a number', 1],
    ['null', null],
    ['an array', [{ tenantId: 'acme', exp: 1 }]],
  ])('refuses %s as payload (invalid_token)', (_what, payload) => {
    const error = refusal(() => parseClaims(payload));
    expect(error.reason).toBe('invalid_token');
    expect(error.message).toBe('Invalid token');
  });

  it('refuses a null or absent exp as missing, not as malformed', () => {
    expect(refusal(() => parseClaims({ tenantId: 'acme', exp: null })).reason).toBe('missing_exp');
    expect(refusal(() => parseClaims({ tenantId: 'acme' })).reason).toBe('missing_exp');
  });

  it('refuses a null or absent tenantId as missing, not as malformed', () => {
    expect(refusal(() => parseClaims({ tenantId: null, exp: 1 })).reason).toBe('missing_tenant');
    expect(refusal(() => parseClaims({ exp: 1 })).reason).toBe('missing_tenant');
  });

  it('names every malformed claim, once each, in the message', () => {
    const error = refusal(() => parseClaims({ tenantId: 'acme', exp: '1', role: 'root', sub: '' }));
    expect(error.reason).toBe('invalid_claims');
    expect(error.message).toBe('Token claims are invalid: sub, role, exp');
  });

  it('returns the claims, role defaulting to member', () => {
    expect(parseClaims({ tenantId: 'acme', exp: 10, nbf: 5 })).toEqual({
      tenantId: 'acme',
      role: 'member',
      exp: 10,
      nbf: 5,
    });
  });
});
