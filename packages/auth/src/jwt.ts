import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { ROLES, type Role, tenantIdSchema } from '@tern/contracts';
import { type Algorithm, createDecoder, createSigner, createVerifier } from 'fast-jwt';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { AuthError, type AuthErrorReason } from './errors.js';

/** The claims of a dashboard session (SPEC §3), once verified. */
export interface DashboardClaims {
  tenantId: string;
  sub?: string;
  role: Role;
  /** Seconds since the epoch, as in the token. */
  exp: number;
}

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

const RSA_ALGORITHMS: readonly Algorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
const EC_ALGORITHM_BY_CURVE: Readonly<Record<string, Algorithm>> = {
  prime256v1: 'ES256',
  secp384r1: 'ES384',
  secp521r1: 'ES512',
};

/**
 * The algorithms a public key may verify, from the key itself — never from the token — so an
 * HS256 token can never be checked with a public key used as an HMAC secret, and an ES256 header
 * cannot pair with an RSA key.
 */
export function algorithmsForPublicKey(key: KeyObject): Algorithm[] {
  if (key.type !== 'public') throw new Error('expected a public key');
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return [...RSA_ALGORITHMS];
    case 'rsa-pss':
      // fast-jwt reads no id-RSASSA-PSS key; the plain RSA key of the same pair verifies PS* too.
      throw new Error(
        'RSA-PSS (id-RSASSA-PSS) keys are not supported: give the plain RSA public key, which verifies PS256/PS384/PS512 too',
      );
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      const alg = curve === undefined ? undefined : EC_ALGORITHM_BY_CURVE[curve];
      if (alg === undefined) throw new Error(`unsupported EC curve ${curve ?? '(unknown)'}`);
      return [alg];
    }
    case 'ed25519':
    case 'ed448':
      return ['EdDSA'];
    default:
      throw new Error(`unsupported public key type ${key.asymmetricKeyType ?? '(unknown)'}`);
  }
}

/** Verifies the signature of a token with one key; returns the (unchecked) payload. */
interface SignatureCheck {
  algorithms: readonly Algorithm[];
  verify(token: string): unknown;
}

function signatureCheck(key: string, algorithms: readonly Algorithm[]): SignatureCheck {
  // Claims with a time are checked by us against the injected clock; fast-jwt's clock is fixed
  // at creation. No token cache: it would key on wall-clock time, and verification is cheap.
  const verify = createVerifier({
    key,
    algorithms: [...algorithms],
    ignoreExpiration: true,
    ignoreNotBefore: true,
    cache: false,
  });
  return { algorithms, verify: (token) => verify(token) };
}

function publicKeyCheck(key: KeyObject, onlyAlgorithm?: string): SignatureCheck {
  let algorithms = algorithmsForPublicKey(key);
  if (onlyAlgorithm !== undefined) algorithms = algorithms.filter((alg) => alg === onlyAlgorithm);
  if (algorithms.length === 0) throw new Error(`algorithm ${onlyAlgorithm} does not fit the key`);
  return signatureCheck(key.export({ type: 'spki', format: 'pem' }).toString(), algorithms);
}

const decodeComplete = createDecoder({ complete: true }) as (token: string) => {
  header: Record<string, unknown>;
  payload: unknown;
};

function tokenErrorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

function toAuthError(error: unknown): AuthError {
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
    default: {
      const _exhaustive: never = reason;
      return _exhaustive;
    }
  }
}

const fail = (reason: AuthErrorReason, message = messageFor(reason)) => new AuthError(reason, message);

const claimsSchema = z.object({
  tenantId: tenantIdSchema,
  sub: z.string().min(1).max(256).optional(),
  role: z.enum(ROLES).default('member'),
  exp: z.number().finite(),
  nbf: z.number().finite().optional(),
});

type Claims = z.infer<typeof claimsSchema>;

/** The claims of a verified payload, before any check against the clock. */
function parseClaims(payload: unknown): Claims {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw fail('invalid_token');
  const raw = payload as Record<string, unknown>;
  if (raw.exp === undefined || raw.exp === null) throw fail('missing_exp');
  if (raw.tenantId === undefined || raw.tenantId === null) throw fail('missing_tenant');
  const parsed = claimsSchema.safeParse(raw);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? 'claims')))];
    throw fail('invalid_claims', `Token claims are invalid: ${fields.join(', ')}`);
  }
  return parsed.data;
}

/** The time checks of the claims, against the injected clock: run on every use of a token. */
function checkClaims(
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

type KeyResolver = (header: Record<string, unknown>) => Promise<SignatureCheck>;

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

interface JwksOptions {
  now: () => number;
  minRefreshIntervalMs: number;
  maxAgeMs: number;
  timeoutMs: number;
}

interface JwksEntry {
  kid: string | undefined;
  check: SignatureCheck;
}

const jwksSchema = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

/** Signing keys only: public-key types, not marked for encryption. Symmetric (`oct`) keys never. */
function entryFromJwk(jwk: Record<string, unknown>): JwksEntry | undefined {
  if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') return undefined;
  if (jwk.use !== undefined && jwk.use !== 'sig') return undefined;
  if (jwk.alg !== undefined && typeof jwk.alg !== 'string') return undefined;
  try {
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    const kid = typeof jwk.kid === 'string' ? jwk.kid : undefined;
    return { kid, check: publicKeyCheck(key, jwk.alg as string | undefined) };
  } catch {
    // One unusable key (unknown curve, bad modulus…) must not take the whole set down.
    return undefined;
  }
}

function createJwksResolver(url: string, opts: JwksOptions): KeyResolver {
  let entries: JwksEntry[] | undefined;
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let attemptedAt = Number.NEGATIVE_INFINITY;
  let inflight: Promise<void> | undefined;

  async function load(): Promise<void> {
    const response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    if (!response.ok) throw new Error(`JWKS fetch answered ${response.status}`);
    const body = jwksSchema.parse(await response.json());
    entries = body.keys.map(entryFromJwk).filter((entry) => entry !== undefined);
    fetchedAt = opts.now();
  }

  /** Single-flight and rate-bounded: a flood of unknown `kid`s costs at most one fetch per interval. */
  async function refresh(): Promise<void> {
    if (inflight) return inflight;
    if (opts.now() - attemptedAt < opts.minRefreshIntervalMs) return;
    attemptedAt = opts.now();
    inflight = load()
      .catch(() => {
        // Keep serving the previous key set; with none at all the lookup below reports it.
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  }

  function find(kid: unknown): JwksEntry | undefined {
    if (!entries) return undefined;
    if (typeof kid === 'string') return entries.find((entry) => entry.kid === kid);
    // A token without `kid` is only unambiguous against a one-key set.
    return entries.length === 1 ? entries[0] : undefined;
  }

  return async (header) => {
    if (header.kid !== undefined && typeof header.kid !== 'string') throw fail('invalid_token');
    if (!entries || opts.now() - fetchedAt > opts.maxAgeMs) await refresh();
    let entry = find(header.kid);
    if (!entry && entries) {
      await refresh();
      entry = find(header.kid);
    }
    if (!entries) throw fail('jwks_unavailable');
    if (!entry) throw fail('unknown_key');
    return entry.check;
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
