import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * VERP envelope senders (SPEC §21): every SMTP send's MAIL FROM is `b+<emailId>.<hmac>@<bounce
 * host>`, so a bounce (a DSN sent to the envelope sender) names its email by the address it was
 * sent to, not by anything in its content. The HMAC (SHA-256 under TRACKING_SECRET, a label of its
 * own, over the tenant and the email id; 16 hex digits) makes the address unforgeable: a bounce
 * to an address Tern did not write is dropped. The tenant is in the MAC but not in the address:
 * the listener finds the candidates by email id and keeps the one whose MAC matches.
 */
const LABEL = 'tern-verp-v1';
const MAC_HEX = 16;

export function verpMac(secret: string, tenantId: string, emailId: string): string {
  return createHmac('sha256', secret)
    .update(`${LABEL}\u0000${tenantId}\u0000${emailId}`)
    .digest('hex')
    .slice(0, MAC_HEX);
}

/** The envelope sender of one email of `tenantId` on `bounceHost`. */
export function verpAddress(secret: string, tenantId: string, emailId: string, bounceHost: string): string {
  return `b+${emailId}.${verpMac(secret, tenantId, emailId)}@${bounceHost}`;
}

/**
 * The email id and MAC a VERP local part claims, or null when it is not one. Says nothing about
 * whether it is genuine: {@link verpMatches} decides that against a tenant. Case-insensitive in
 * its frame (an MTA may fold a local part's case; the MAC is compared in lower case).
 */
export function parseVerpLocalPart(localPart: string): { emailId: string; mac: string } | null {
  const m = /^b\+([A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,127})\.([0-9a-fA-F]{16})$/i.exec(localPart);
  if (!m) return null;
  return { emailId: m[1]!, mac: m[2]!.toLowerCase() };
}

/** True when `mac` is the MAC Tern wrote for this tenant's email (constant time). */
export function verpMatches(secret: string, tenantId: string, emailId: string, mac: string): boolean {
  const expected = Buffer.from(verpMac(secret, tenantId, emailId));
  const given = Buffer.from(mac.toLowerCase());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
