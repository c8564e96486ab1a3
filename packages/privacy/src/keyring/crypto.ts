import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import type { Sealed, SealedFields } from './types.js';

/**
 * The keyring's cryptography without I/O: key derivation from `ENCRYPTION_KEY`, the wrapping of
 * data keys, the additional data that binds a sealed value to its email, and sealing with a key
 * already at hand.
 */

/** Fewest bytes of ENCRYPTION_KEY (AES-256 wants 256 bits of input keying material). */
export const MIN_ENCRYPTION_KEY_BYTES = 32;

const WRAP_INFO = 'tern data-key wrapping v1';
const HMAC_INFO = 'tern recipient hash v1';

/** 'YYYY-MM' of a date in UTC: the period of a data key. */
export function periodOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** The first period still (partly) inside a retention window starting at `cutoff`: keys of earlier months hold only expired content. */
export function firstKeptPeriod(cutoff: Date): string {
  return periodOf(cutoff);
}

export const b64 = (b: Buffer) => b.toString('base64url');
export const unb64 = (s: string) => Buffer.from(s, 'base64url');
export const cacheKey = (tenantId: string, rh: string, p: string) => `${tenantId}\n${rh}\n${p}`;

/** A data key's name: (tenant, recipient hash, period). */
export type KeyRef = { tenantId: string; rh: string; p: string };

export function bytesAad(tenantId: string, emailId: string, label: string, rh: string, p: string): Buffer {
  return Buffer.from(`tern sealed bytes v1\n${tenantId}\n${emailId}\n${label}\n${rh}\n${p}`, 'utf8');
}

export function aad(tenantId: string, emailId: string, rh: string, p: string): Buffer {
  return Buffer.from(`tern sealed v1\n${tenantId}\n${emailId}\n${rh}\n${p}`, 'utf8');
}

export function deriveKeys(encryptionKey: string): { wrapKey: Buffer; hmacKey: Buffer } {
  if (Buffer.byteLength(encryptionKey, 'utf8') < MIN_ENCRYPTION_KEY_BYTES) {
    throw new Error(`ENCRYPTION_KEY must be at least ${MIN_ENCRYPTION_KEY_BYTES} bytes`);
  }
  const derive = (info: string) =>
    Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.from('tern'), info, 32));
  return { wrapKey: derive(WRAP_INFO), hmacKey: derive(HMAC_INFO) };
}

const wrapAad = (tenantId: string, rh: string, p: string) =>
  Buffer.from(`tern data key v1\n${tenantId}\n${rh}\n${p}`, 'utf8');

/** A data key wrapped under `wrapKey` (AES-256-GCM, additional data = the key's name): iv, tag, ciphertext. */
export function wrap(wrapKey: Buffer, { tenantId, rh, p }: KeyRef, key: Buffer, iv: Buffer): Buffer {
  const cipher = createCipheriv('aes-256-gcm', wrapKey, iv);
  cipher.setAAD(wrapAad(tenantId, rh, p));
  const ct = Buffer.concat([cipher.update(key), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]);
}

/** The data key of a `wrap`ped value; throws when wrapped under another key or altered. */
export function unwrap(wrapKey: Buffer, { tenantId, rh, p }: KeyRef, wrapped: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', wrapKey, wrapped.subarray(0, 12));
  decipher.setAAD(wrapAad(tenantId, rh, p));
  decipher.setAuthTag(wrapped.subarray(12, 28));
  return Buffer.concat([decipher.update(wrapped.subarray(28)), decipher.final()]);
}

/** Seals the fields of one email under the key of `ref`, found in `keys` (by cache key). */
export function sealWith(
  keys: Map<string, Buffer>,
  { tenantId, rh, p }: KeyRef,
  emailId: string,
  fields: SealedFields,
  iv: Buffer,
): Sealed {
  const cipher = createCipheriv('aes-256-gcm', keys.get(cacheKey(tenantId, rh, p))!, iv);
  cipher.setAAD(aad(tenantId, emailId, rh, p));
  const ct = Buffer.concat([cipher.update(JSON.stringify(fields), 'utf8'), cipher.final()]);
  return { v: 1, rh, p, iv: b64(iv), ct: b64(ct), tag: b64(cipher.getAuthTag()) };
}
