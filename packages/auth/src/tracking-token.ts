import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Tracking tokens (SPEC §11), keyed with TRACKING_SECRET. A token names the kind (open or click),
 * tenant, email and, for a click, the destination URL; altering any byte of it makes it invalid,
 * so a click can only redirect where the sender signed (no open redirect).
 *
 * - **v2** (what the sender writes): `base64url(0x02 ‖ nonce ‖ AES-256-GCM(payload) ‖ tag)` —
 *   opaque (a proxy log or a reader sees neither the tenant, the email id nor the URL) and about
 *   45 characters shorter than v1. The GCM tag authenticates; the nonce is derived from the
 *   payload (synthetic IV), so the same link always gets the same token and the key derivation
 *   can be pinned by a fixed expected token.
 * - **v1** (mail already sent before v2): `base64url(JSON payload) . base64url(HMAC-SHA256)`,
 *   still accepted so no link already in an inbox breaks; `signLegacyTrackingToken` writes one.
 *
 * Both parse strictly: only canonical base64url, nothing appended (a `=` or any other character
 * after a genuine token makes it a different, invalid token), at most 8 192 characters.
 */
export type TrackingPayload =
  | { kind: 'open'; tenantId: string; emailId: string }
  | { kind: 'click'; tenantId: string; emailId: string; url: string };

type Wire = { k: 'o' | 'c'; t: string; e: string; u?: string };

/** Longest token accepted (the router's MAX_PARAM_LENGTH). */
export const MAX_TRACKING_TOKEN_LENGTH = 8192;

const V2 = 2;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Only http(s) destinations redirect: anything else (javascript:, data:, relative) is refused. */
const HTTP_URL = /^https?:\/\//i;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

const mac = (secret: string, body: string) =>
  createHmac('sha256', secret).update(`tern-tracking.${body}`).digest();

interface V2Keys {
  enc: Buffer;
  nonce: Buffer;
}
const v2KeyCache = new Map<string, V2Keys>();

function v2Keys(secret: string): V2Keys {
  let keys = v2KeyCache.get(secret);
  // Stryker disable next-line ConditionalExpression: equivalent — always missing the cache derives the same keys.
  if (keys === undefined) {
    const derive = (label: string) =>
      Buffer.from(hkdfSync('sha256', secret, 'tern', `tern/tracking/v2/${label}`, 32));
    keys = { enc: derive('enc'), nonce: derive('nonce') };
    // One secret per process in practice; the bound only keeps a misuse from growing memory.
    // Stryker disable next-line all: equivalent — when the cache is emptied changes memory, never a key or an answer.
    if (v2KeyCache.size > 16) v2KeyCache.clear();
    v2KeyCache.set(secret, keys);
  }
  return keys;
}

/** Decodes canonical base64url only: `Buffer.from` skips junk and spare bits, which would make tokens malleable. */
function strictBase64url(text: string): Buffer | null {
  // Any other character, a `=`, or spare bits set: the bytes encode back to another text.
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

function toWire(payload: TrackingPayload): Wire {
  return payload.kind === 'open'
    ? { k: 'o', t: payload.tenantId, e: payload.emailId }
    : { k: 'c', t: payload.tenantId, e: payload.emailId, u: payload.url };
}

function fromWire(wire: Partial<Wire>, kind: TrackingPayload['kind']): TrackingPayload | null {
  if (typeof wire.t !== 'string' || typeof wire.e !== 'string') return null;
  if (kind === 'open' && wire.k === 'o') return { kind, tenantId: wire.t, emailId: wire.e };
  if (kind === 'click' && wire.k === 'c' && typeof wire.u === 'string' && HTTP_URL.test(wire.u)) {
    return { kind, tenantId: wire.t, emailId: wire.e, url: wire.u };
  }
  return null;
}

/** A v2 (opaque) token: what the sender puts in mail. */
export function signTrackingToken(secret: string, payload: TrackingPayload): string {
  const { enc, nonce: nonceKey } = v2Keys(secret);
  const wire = toWire(payload);
  const plaintext = Buffer.from(
    JSON.stringify([wire.k, wire.t, wire.e, ...(wire.u === undefined ? [] : [wire.u])]),
  );
  const nonce = createHmac('sha256', nonceKey).update(plaintext).digest().subarray(0, NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', enc, nonce);
  const sealed = Buffer.concat([
    Buffer.from([V2]),
    nonce,
    cipher.update(plaintext),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  return sealed.toString('base64url');
}

/** A v1 token (`payload.signature`), as mail sent before v2 carries; verified for compatibility. */
export function signLegacyTrackingToken(secret: string, payload: TrackingPayload): string {
  const body = Buffer.from(JSON.stringify(toWire(payload))).toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

function openV1(secret: string, token: string): Partial<Wire> | null {
  // A second `.` lands in the signature and an empty body fails the pattern: both are refused below.
  const dot = token.indexOf('.');
  const body = token.slice(0, dot);
  const signature = strictBase64url(token.slice(dot + 1));
  if (signature === null || !BASE64URL.test(body)) return null;
  const expected = mac(secret, body);
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) return null;
  try {
    // Any JSON value: `fromWire` takes only an object with the fields (the caller refuses null).
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<Wire> | null;
  } catch {
    return null;
  }
}

function openV2(secret: string, token: string): Partial<Wire> | null {
  const raw = strictBase64url(token);
  if (raw === null || raw[0] !== V2) return null;
  // Stryker disable next-line all: equivalent — a shorter token fails GCM authentication in the try below; this refuses it early.
  if (raw.length < 1 + NONCE_BYTES + TAG_BYTES + 1) return null;
  const { enc } = v2Keys(secret);
  try {
    const decipher = createDecipheriv('aes-256-gcm', enc, raw.subarray(1, 1 + NONCE_BYTES));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const plaintext = Buffer.concat([
      decipher.update(raw.subarray(1 + NONCE_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ]);
    const parsed: unknown = JSON.parse(plaintext.toString('utf8'));
    // [kind, tenant, email, url?]: `fromWire` checks each member (a missing one is undefined).
    if (!Array.isArray(parsed) || parsed.length > 4) return null;
    const [k, t, e, u] = parsed as unknown[];
    return { k, t, e, u } as Partial<Wire>;
  } catch {
    return null;
  }
}

/** The payload of a genuine token (v2, or v1 of mail already sent) of that kind, else null. */
export function verifyTrackingToken(
  secret: string,
  token: string,
  kind: TrackingPayload['kind'],
): TrackingPayload | null {
  if (token.length > MAX_TRACKING_TOKEN_LENGTH) return null;
  const wire = token.includes('.') ? openV1(secret, token) : openV2(secret, token);
  return wire === null ? null : fromWire(wire, kind);
}

/**
 * Link scanners and prefetchers whose requests are not a person reading (SPEC §11): matched
 * case-insensitively as substrings of the User-Agent. Their opens/clicks are recorded with
 * `bot: true` and not counted. Listed in docs/sending.md.
 */
export const BOT_USER_AGENTS = [
  'GoogleImageProxy', // Gmail's image proxy prefetches every image
  'YahooMailProxy',
  'Barracuda',
  'Mimecast',
  'Proofpoint',
  'Symantec',
  'MessageLabs',
  'SafeLinks', // Microsoft Defender Safe Links
  'Microsoft Office/', // Outlook link preview
  'Trend Micro',
  'Sophos',
  'FortiGuard',
  'Slackbot',
  'Twitterbot',
  'facebookexternalhit',
  'LinkedInBot',
  'Discordbot',
  'WhatsApp',
  'TelegramBot',
  'Googlebot',
  'bingbot',
  'curl/',
  'Wget/',
  'python-requests',
  'Go-http-client',
  'HeadlessChrome',
] as const;

const BOT_PATTERN = new RegExp(
  BOT_USER_AGENTS.map((s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'),
  'i',
);

export function isBotUserAgent(userAgent: string | undefined): boolean {
  return userAgent !== undefined && BOT_PATTERN.test(userAgent);
}
