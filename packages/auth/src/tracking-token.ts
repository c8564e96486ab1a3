import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Tracking tokens (SPEC §11): `base64url(JSON payload) . base64url(HMAC-SHA256)` keyed with
 * TRACKING_SECRET. The payload names the kind (open or click), tenant, email and, for a click,
 * the destination URL; altering any byte of it breaks the signature, so a click can only
 * redirect where the sender signed (no open redirect).
 */
export type TrackingPayload =
  | { kind: 'open'; tenantId: string; emailId: string }
  | { kind: 'click'; tenantId: string; emailId: string; url: string };

type Wire = { k: 'o' | 'c'; t: string; e: string; u?: string };

const mac = (secret: string, body: string) =>
  createHmac('sha256', secret).update(`tern-tracking.${body}`).digest();

export function signTrackingToken(secret: string, payload: TrackingPayload): string {
  const wire: Wire =
    payload.kind === 'open'
      ? { k: 'o', t: payload.tenantId, e: payload.emailId }
      : { k: 'c', t: payload.tenantId, e: payload.emailId, u: payload.url };
  const body = Buffer.from(JSON.stringify(wire)).toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

/** The payload of a genuine token of that kind, else null (forged, altered, malformed). */
export function verifyTrackingToken(
  secret: string,
  token: string,
  kind: TrackingPayload['kind'],
): TrackingPayload | null {
  if (token.length > 8192) return null;
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) return null;
  const body = token.slice(0, dot);
  const signature = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = mac(secret, body);
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) return null;
  let wire: Partial<Wire>;
  try {
    wire = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<Wire>;
  } catch {
    return null;
  }
  if (typeof wire.t !== 'string' || typeof wire.e !== 'string') return null;
  if (kind === 'open' && wire.k === 'o') return { kind, tenantId: wire.t, emailId: wire.e };
  if (kind === 'click' && wire.k === 'c' && typeof wire.u === 'string' && /^https?:\/\//i.test(wire.u)) {
    return { kind, tenantId: wire.t, emailId: wire.e, url: wire.u };
  }
  return null;
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
