import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { z } from 'zod';
import { fail } from './jwt-claims.js';
import { type KeyResolver, publicKeyCheck, type SignatureCheck } from './jwt-keys.js';

// Dashboard JWTs verified against a JSON Web Key Set (`JWT_JWKS_URL`): the key set is fetched,
// kept, and re-fetched when stale or when a token names an unknown `kid`.

export interface JwksOptions {
  now: () => number;
  minRefreshIntervalMs: number;
  maxAgeMs: number;
  timeoutMs: number;
}

interface JwksEntry {
  /** The JWK's `kid` as given: one that is not a string matches no token's (a string or none). */
  kid: unknown;
  check: SignatureCheck;
}

const jwksSchema = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

/** Signing keys only: public-key types, not marked for encryption. Symmetric (`oct`) keys never. */
function entryFromJwk(jwk: Record<string, unknown>): JwksEntry | undefined {
  if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') return undefined;
  if (jwk.use !== undefined && jwk.use !== 'sig') return undefined;
  try {
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    // An `alg` that is not a string names no algorithm of the key: publicKeyCheck throws.
    return { kid: jwk.kid, check: publicKeyCheck(key, jwk.alg as string | undefined) };
  } catch {
    // One unusable key (unknown curve, bad modulus…) must not take the whole set down.
    return undefined;
  }
}

export function createJwksResolver(url: string, opts: JwksOptions): KeyResolver {
  let entries: JwksEntry[] | undefined;
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let attemptedAt = Number.NEGATIVE_INFINITY;
  let inflight: Promise<void> | undefined;

  async function load(): Promise<void> {
    const response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    // Not an answer: keep the previous key set, as refresh() does when the fetch throws.
    if (!response.ok) return;
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
