import type { KeyObject } from 'node:crypto';
import { type Algorithm, createVerifier } from 'fast-jwt';

// The keys of dashboard JWTs (SPEC §3): which algorithms a key verifies, and the check of a
// token's signature with one key. Used by jwt.ts (the one configured key) and jwks.ts.

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
      const curve = key.asymmetricKeyDetails?.namedCurve ?? '(unknown)';
      const alg = EC_ALGORITHM_BY_CURVE[curve];
      if (alg === undefined) throw new Error(`unsupported EC curve ${curve}`);
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
export interface SignatureCheck {
  algorithms: readonly Algorithm[];
  verify(token: string): unknown;
}

export function signatureCheck(key: string, algorithms: readonly Algorithm[]): SignatureCheck {
  // Claims with a time are checked by us against the injected clock; fast-jwt's clock is fixed
  // at creation. No token cache (fast-jwt's default: none without `cache`): it would key on
  // wall-clock time, and verification is cheap.
  const verify = createVerifier({
    key,
    algorithms: [...algorithms],
    ignoreExpiration: true,
    ignoreNotBefore: true,
  });
  return { algorithms, verify: (token) => verify(token) };
}

export function publicKeyCheck(key: KeyObject, onlyAlgorithm?: string): SignatureCheck {
  let algorithms = algorithmsForPublicKey(key);
  if (onlyAlgorithm !== undefined) algorithms = algorithms.filter((alg) => alg === onlyAlgorithm);
  if (algorithms.length === 0) throw new Error(`algorithm ${onlyAlgorithm} does not fit the key`);
  return signatureCheck(key.export({ type: 'spki', format: 'pem' }).toString(), algorithms);
}

/** Finds the signature check of a token from its header (the one key, or a key of a JWKS). */
export type KeyResolver = (header: Record<string, unknown>) => Promise<SignatureCheck>;
