import { createPublicKey, type KeyObject } from 'node:crypto';
import type { Role } from '@tern/contracts';
import { type Algorithm, createDecoder, createSigner } from 'fast-jwt';
import { LRUCache } from 'lru-cache';
import { createJwksResolver } from './jwks.js';
import {
  type Claims,
  checkClaims,
  type DashboardClaims,
  fail,
  parseClaims,
  toAuthError,
} from './jwt-claims.js';
import { type KeyResolver, publicKeyCheck, signatureCheck } from './jwt-keys.js';

export type { DashboardClaims } from './jwt-claims.js';
export { algorithmsForPublicKey } from './jwt-keys.js';

export interface JwtVerifierOptions {
  /** HS256 shared secret (`JWT_SECRET`). */
  secret?: string;
  /** PEM public key, SPKI or PKCS#1, or an X.509 certificate (`JWT_PUBLIC_KEY`): RS*, PS*, ES*, EdDSA. */
  publicKey?: string;
  /** URL of a JSON Web Key Set; keys are picked by the token's `kid`. */
  jwksUrl?: string;
  /** Allowed clock skew on `exp`/`nbf`, in milliseconds. Default 0. */
  clockTolerance?: number;
  /** Clock in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * Largest accepted `exp - now`: a token valid for longer is refused (a leaked long-lived
   * token cannot be revoked). Default 30 days ({@link DEFAULT_JWT_MAX_LIFETIME_MS}).
   */
  maxLifetimeMs?: number;
  /** JWKS mode: the key set is re-fetched at most this often (unknown `kid`, stale set). Default 30 s. */
  jwksMinRefreshIntervalMs?: number;
  /** JWKS mode: a key set older than this is re-fetched before use. Default 10 min. */
  jwksMaxAgeMs?: number;
  /** JWKS mode: timeout of one fetch. Default 5 s. */
  jwksTimeoutMs?: number;
}

export interface JwtVerifier {
  /** Resolves to the verified claims, or rejects with an {@link AuthError}. */
  verify(token: string): Promise<DashboardClaims>;
}

/** Default cap of a dashboard token's remaining lifetime: 30 days. */
export const DEFAULT_JWT_MAX_LIFETIME_MS = 30 * 24 * 3600 * 1000;

/** Longer than any sane dashboard token; refusing early bounds the work an attacker can ask for. */
const MAX_TOKEN_LENGTH = 8192;

const decodeComplete = createDecoder({ complete: true }) as (token: string) => {
  header: Record<string, unknown>;
  payload: unknown;
};

/**
 * Verifies dashboard JWTs (SPEC §3) with exactly one of: an HS256 secret, a PEM public key, or a
 * JWKS URL. The accepted algorithms always come from the configured key, never from the token.
 * Throws at creation (a configuration error) when the options are unusable.
 */
export function createJwtVerifier(opts: JwtVerifierOptions): JwtVerifier {
  const now = opts.now ?? Date.now;
  const toleranceMs = opts.clockTolerance ?? 0;
  if (!Number.isFinite(toleranceMs) || toleranceMs < 0) throw new Error('clockTolerance must be ≥ 0 ms');
  const maxLifetimeMs = opts.maxLifetimeMs ?? DEFAULT_JWT_MAX_LIFETIME_MS;
  if (!(maxLifetimeMs > 0)) throw new Error('maxLifetimeMs must be > 0');
  const sources = [opts.secret, opts.publicKey, opts.jwksUrl].filter((s) => s !== undefined);
  if (sources.length !== 1) throw new Error('exactly one of secret, publicKey or jwksUrl is required');

  let resolveKey: KeyResolver;
  if (opts.secret !== undefined) {
    if (opts.secret.length === 0) throw new Error('the JWT secret must not be empty');
    // A PEM in the secret slot would let anyone holding the public key forge HS256 tokens.
    if (opts.secret.includes('-----BEGIN'))
      throw new Error('the JWT secret looks like a PEM key; use publicKey');
    const check = signatureCheck(opts.secret, ['HS256']);
    resolveKey = async () => check;
  } else if (opts.publicKey !== undefined) {
    let key: KeyObject;
    try {
      key = createPublicKey(opts.publicKey);
    } catch (error) {
      throw new Error('the JWT public key is not a readable PEM public key', { cause: error });
    }
    const check = publicKeyCheck(key);
    resolveKey = async () => check;
  } else {
    resolveKey = createJwksResolver(opts.jwksUrl!, {
      now,
      minRefreshIntervalMs: opts.jwksMinRefreshIntervalMs ?? 30_000,
      maxAgeMs: opts.jwksMaxAgeMs ?? 600_000,
      timeoutMs: opts.jwksTimeoutMs ?? 5_000,
    });
  }

  // Tokens whose signature and claims were verified already (a dashboard sends the same token on
  // every request): the signature cannot stop being valid under a key fixed for the process, so
  // only the time checks run again. Not with a JWKS, whose keys may be withdrawn.
  const verified = opts.jwksUrl === undefined ? new LRUCache<string, Claims>({ max: 1000 }) : null;

  return {
    async verify(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
        throw fail('invalid_token');
      }
      const known = verified?.get(token);
      if (known !== undefined) return checkClaims(known, now(), toleranceMs, maxLifetimeMs);
      let header: Record<string, unknown>;
      try {
        header = decodeComplete(token).header;
      } catch (error) {
        throw toAuthError(error);
      }
      if (typeof header.alg !== 'string' || header.alg === 'none') throw fail('invalid_algorithm');
      const check = await resolveKey(header);
      if (!check.algorithms.includes(header.alg as Algorithm)) throw fail('invalid_algorithm');
      let payload: unknown;
      try {
        payload = check.verify(token);
      } catch (error) {
        throw toAuthError(error);
      }
      const claims = parseClaims(payload);
      verified?.set(token, claims);
      return checkClaims(claims, now(), toleranceMs, maxLifetimeMs);
    },
  };
}

export interface SignDashboardTokenOptions {
  secret: string;
  tenantId: string;
  role?: Role;
  sub?: string;
  expiresInSeconds: number;
  /** Clock in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * Largest accepted `exp - now`: a token valid for longer is refused (a leaked long-lived
   * token cannot be revoked). Default 30 days ({@link DEFAULT_JWT_MAX_LIFETIME_MS}).
   */
  maxLifetimeMs?: number;
}

/** An HS256 dashboard token (tests, the dev banner, the demo). */
export function signDashboardToken(opts: SignDashboardTokenOptions): string {
  const iat = Math.floor((opts.now ?? Date.now)() / 1000);
  const payload: Record<string, unknown> = {
    tenantId: opts.tenantId,
    role: opts.role ?? 'member',
    iat,
    exp: iat + opts.expiresInSeconds,
  };
  if (opts.sub !== undefined) payload.sub = opts.sub;
  const sign = createSigner({ key: opts.secret, algorithm: 'HS256', noTimestamp: true });
  return sign(payload);
}
