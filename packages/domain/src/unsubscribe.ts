import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Unsubscribe tokens and the RFC 8058 headers of campaign and sequence mail (SPEC §14).
 *
 * A token names (tenant, recipient address, source) and is:
 * - **signed**: HMAC-SHA256 (first 16 bytes) with a key derived from `TRACKING_SECRET`, checked in
 *   constant time before anything else, so a forged or altered token is refused;
 * - **opaque**: the payload is AES-256-GCM encrypted, so the address never appears in a URL,
 *   a request log or a proxy's access log;
 * - **deterministic**: the nonce is derived from the payload (synthetic IV), so the same recipient
 *   and source always get the same link and building one needs no randomness or storage.
 *
 * The keys are derived with HKDF under their own labels, so these tokens never collide with the
 * tracking tokens that use the same secret.
 */

const VERSION = 1;
const NONCE_BYTES = 12;
const GCM_TAG_BYTES = 16;
const SIGNATURE_BYTES = 16;
/** TRACKING_SECRET's minimum length (checked by the config at start). */
export const MIN_TRACKING_SECRET_LENGTH = 16;

export interface UnsubscribeClaims {
  tenantId: string;
  /** The recipient address, lowercased. */
  email: string;
  /** What the mail belonged to, e.g. `campaign:cmp_…` or `sequence:seq_…`. */
  source: string;
}

interface Keys {
  enc: Buffer;
  mac: Buffer;
}

const keyCache = new Map<string, Keys>();

const keysOf = (secret: string): Keys => keyCache.get(secret) ?? deriveKeys(secret);

function deriveKeys(secret: string): Keys {
  if (secret.length < MIN_TRACKING_SECRET_LENGTH) {
    throw new Error(`the tracking secret must be at least ${MIN_TRACKING_SECRET_LENGTH} characters`);
  }
  const derive = (label: string) =>
    Buffer.from(hkdfSync('sha256', secret, 'tern', `tern/unsubscribe/v1/${label}`, 32));
  const keys = { enc: derive('enc'), mac: derive('mac') };
  // One secret per process in practice; the bound only keeps a misuse from growing memory.
  // Stryker disable next-line all: equivalent — when the cache is emptied changes memory, never a key or an answer.
  if (keyCache.size > 16) keyCache.clear();
  keyCache.set(secret, keys);
  return keys;
}

const sign = (mac: Buffer, data: Buffer) =>
  createHmac('sha256', mac).update(data).digest().subarray(0, SIGNATURE_BYTES);

/** The token of (tenant, address, source) under `secret`. The address is lowercased first. */
export function createUnsubscribeToken(secret: string, claims: UnsubscribeClaims): string {
  const { enc, mac } = keysOf(secret);
  const plaintext = Buffer.from(JSON.stringify([claims.tenantId, claims.email.toLowerCase(), claims.source]));
  const nonce = createHmac('sha256', mac).update('nonce').update(plaintext).digest().subarray(0, NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', enc, nonce);
  const sealed = Buffer.concat([
    Buffer.from([VERSION]),
    nonce,
    cipher.update(plaintext),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  return Buffer.concat([sealed, sign(mac, sealed)]).toString('base64url');
}

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,2048}$/;

/** The claims of a genuine token; `null` for anything forged, altered, truncated or malformed. */
export function verifyUnsubscribeToken(secret: string, token: string): UnsubscribeClaims | null {
  if (!TOKEN_PATTERN.test(token)) return null;
  const raw = Buffer.from(token, 'base64url');
  if (raw.length < 1 + NONCE_BYTES + GCM_TAG_BYTES + SIGNATURE_BYTES + 1 || raw[0] !== VERSION) return null;
  const { enc, mac } = keysOf(secret);
  const sealed = raw.subarray(0, raw.length - SIGNATURE_BYTES);
  const signature = raw.subarray(raw.length - SIGNATURE_BYTES);
  if (!timingSafeEqual(signature, sign(mac, sealed))) return null;
  try {
    const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
    const tag = sealed.subarray(sealed.length - GCM_TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', enc, nonce);
    decipher.setAuthTag(tag);
    const plaintext = Buffer.concat([
      decipher.update(sealed.subarray(1 + NONCE_BYTES, sealed.length - GCM_TAG_BYTES)),
      decipher.final(),
    ]);
    const parsed: unknown = JSON.parse(plaintext.toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((p) => typeof p === 'string')) {
      return null;
    }
    const [tenantId, email, source] = parsed as [string, string, string];
    return { tenantId, email, source };
  } catch {
    return null;
  }
}

export const LIST_UNSUBSCRIBE_POST = 'List-Unsubscribe=One-Click';

export interface ListUnsubscribeOptions extends UnsubscribeClaims {
  /** PUBLIC_URL: where `/u/:token` is served. */
  publicUrl: string;
  /** TRACKING_SECRET. */
  secret: string;
  /** Address of the mailto alternative; default `unsubscribe@<host of publicUrl>`. */
  mailto?: string;
}

/**
 * `List-Unsubscribe` (the https link, then a mailto whose subject carries the token) and
 * `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 2369, RFC 8058) for one recipient of
 * campaign or sequence mail. The link answers `POST` (one click) and `GET` (a confirmation page).
 */
export function listUnsubscribeHeaders(opts: ListUnsubscribeOptions): {
  'List-Unsubscribe': string;
  'List-Unsubscribe-Post': string;
} {
  const token = createUnsubscribeToken(opts.secret, opts);
  const base = unsubscribeBase(opts.publicUrl);
  // A token is base64url: characters a URL takes as they are, so the link is the prefix and the token.
  const link = `${base.linkPrefix}${token}`;
  const mailbox = opts.mailto ?? `unsubscribe@${base.host}`;
  const mailto = `mailto:${mailbox}?subject=${encodeURIComponent(`unsubscribe ${token}`)}`;
  return { 'List-Unsubscribe': `<${link}>, <${mailto}>`, 'List-Unsubscribe-Post': LIST_UNSUBSCRIBE_POST };
}

/** What every header takes of PUBLIC_URL, for the last one asked (one per process in practice). */
let lastBase: { publicUrl: string; linkPrefix: string; host: string } | undefined;

/** `/u/` under PUBLIC_URL, and its host as a mailbox's domain (an IP literal in brackets). */
function unsubscribeBase(publicUrl: string): { linkPrefix: string; host: string } {
  if (lastBase?.publicUrl === publicUrl) return lastBase;
  const base = new URL(publicUrl);
  const linkPrefix = new URL('u/', base.href.endsWith('/') ? base.href : `${base.href}/`).href;
  const host = /^[0-9.]+$|:/.test(base.hostname)
    ? `[${base.hostname.replace(/^\[|\]$/g, '')}]`
    : base.hostname;
  lastBase = { publicUrl, linkPrefix, host };
  return lastBase;
}
