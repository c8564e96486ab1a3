import { isIP } from 'node:net';
import { isBotUserAgent } from './tracking-token.js';

/**
 * Who opened an email (SPEC §21), from the request that fetched its pixel (or a provider's report
 * of that request). The rules, in order (docs/sending.md "Opens: people and machines"):
 *
 * 1. A mail provider's image proxy that fetches when the reader opens the message — Gmail's
 *    `GoogleImageProxy`, Yahoo's `YahooMailProxy` — is a **person**: the proxy fetches the image
 *    the first time the message is displayed (later displays hit its cache), so it is the open.
 * 2. Apple Mail Privacy Protection prefetches every image when the message arrives, whether or
 *    not anyone reads it: a User-Agent of exactly `Mozilla/5.0`, or an address in Apple's
 *    `17.0.0.0/8`, is a **machine**.
 * 3. Security scanners and link previewers (`isBotUserAgent`: Barracuda, Mimecast, Proofpoint,
 *    Safe Links, curl…) are **machines**.
 * 4. Anything else is a person.
 *
 * A machine open is kept (`machine: true` on `email.opened`) and reported apart (`machineOpened`),
 * never counted in `opened` or `openRate`.
 */
export type OpenKind = 'human' | 'machine';

const OPEN_PROXIES = /GoogleImageProxy|YahooMailProxy/i;

/** Apple's 17.0.0.0/8 (IPv4, or IPv4-mapped IPv6). */
function isAppleAddress(ip: string | undefined): boolean {
  if (ip === undefined) return false;
  const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  return isIP(v4) === 4 && v4.split('.')[0] === '17';
}

export function classifyOpen(input: { userAgent?: string | undefined; ip?: string | undefined }): OpenKind {
  const ua = input.userAgent?.trim();
  if (ua !== undefined && OPEN_PROXIES.test(ua)) return 'human';
  if (ua === 'Mozilla/5.0' || isAppleAddress(input.ip)) return 'machine';
  if (isBotUserAgent(ua)) return 'machine';
  return 'human';
}
