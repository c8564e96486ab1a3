import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'tern_';
/** Random part length: 40 base62 characters ≈ 238 bits. SPEC §3 asks for ≥ 32. */
export const API_KEY_RANDOM_LENGTH = 40;
/** Characters of the clear key kept as its public, listable prefix (`tern_` + 7). */
export const API_KEY_DISPLAY_PREFIX_LENGTH = 12;

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
// The largest multiple of 62 that fits in a byte; bytes at or above it are dropped so that
// `byte % 62` is uniform (no modulo bias).
const UNBIASED_LIMIT = 248;

const API_KEY_PATTERN = /^tern_[A-Za-z0-9]{32,}$/;
// Three base64url segments; the signature may be empty so that `alg: none` tokens are still
// recognised as JWTs and refused by the verifier with a precise reason.
const JWT_PATTERN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export interface GeneratedApiKey {
  /** The clear key: returned to the caller once, never stored or logged. */
  key: string;
  /** SHA-256 hex of `key`: what is stored and looked up. */
  hash: string;
  /** First 12 characters of `key`, e.g. `tern_AbCdEfG`: safe to list. */
  prefix: string;
}

/** `length` unbiased random base62 characters (API keys, resource ids). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    // ~3 % of bytes are rejected; asking for a little more than needed usually takes one draw.
    for (const byte of randomBytes(length - out.length + 8)) {
      if (byte >= UNBIASED_LIMIT) continue;
      out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + randomBase62(API_KEY_RANDOM_LENGTH);
  return { key, hash: hashApiKey(key), prefix: key.slice(0, API_KEY_DISPLAY_PREFIX_LENGTH) };
}

/** SHA-256 hex of the clear key. Keys are high-entropy, so a plain hash is enough (no salt). */
export function hashApiKey(key: string): string {
  // One-shot (no Hash object): every API-key request hashes the key it presents.
  return hash('sha256', key, 'hex');
}

export function isApiKeyFormat(s: string): boolean {
  return API_KEY_PATTERN.test(s);
}

export function looksLikeJwt(s: string): boolean {
  return JWT_PATTERN.test(s);
}

export type BearerKind = 'jwt' | 'api_key' | 'unknown';

/** The server tells a JWT from an API key by its form alone (SPEC §3); the two forms never overlap. */
export function classifyBearer(s: string): BearerKind {
  if (isApiKeyFormat(s)) return 'api_key';
  if (looksLikeJwt(s)) return 'jwt';
  return 'unknown';
}

/**
 * Constant-time string equality. Comparing SHA-256 digests gives equal-length buffers, so
 * neither the content nor the length of the expected value leaks through timing.
 */
export function timingSafeEqualStr(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}
