import { createHash, generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);

/** RSA-2048 (SPEC §20): what every receiver verifies and fits one TXT record in two strings. */
const DKIM_KEY_BITS = 2048;

export interface DkimKeyPair {
  /** PKCS#8 PEM. Sealed before it is stored; never in an answer, a log line or the event log. */
  privateKeyPem: string;
  /** The DER SubjectPublicKeyInfo in base64: the `p=` of the DKIM record. */
  publicKeyBase64: string;
}

/** A fresh key pair per domain. Generated off the event loop (node's thread pool), ~50–200 ms. */
export async function generateDkimKey(): Promise<DkimKeyPair> {
  const { privateKey, publicKey } = await generate('rsa', {
    modulusLength: DKIM_KEY_BITS,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyBase64: publicKey.toString('base64') };
}

/**
 * The selector Tern picks for a new key: `tern<yyyymm>-<8 hex>`, the month of its creation (UTC)
 * and 32 bits of the SHA-256 of the domain's own id. A key rotated later gets the selector of its
 * own month, so the old record can stay published while mail signed with it is still in flight.
 * The id part (issue 40 item 11): two tenants adding the same domain in one month got the same
 * selector, so one's DKIM record replaced the other's and its mail failed DKIM.
 */
export function dkimSelector(at: Date, domainId: string): string {
  const month = `${at.getUTCFullYear()}${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
  return `tern${month}-${createHash('sha256').update(domainId).digest('hex').slice(0, 8)}`;
}
