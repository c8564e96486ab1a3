import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * VERP envelope senders (SPEC §21): every SMTP send's MAIL FROM is `b+<emailId>.<hmac>@<bounce
 * host>`, so a bounce (a DSN sent to the envelope sender) names its email by the address it was
 * sent to, not by anything in its content. The HMAC (SHA-256 under TRACKING_SECRET, a label of its
 * own, over the tenant and the email id; 16 hex digits) makes the address unforgeable: a bounce
 * to an address Tern did not write is dropped. The tenant is in the MAC but not in the address:
 * the listener finds the candidates by email id and keeps the one whose MAC matches.
 *
 * Per recipient (issue 40, item 2): `b+<emailId>=<n>.<hmac>` also names the recipient — the n-th
 * of the email's `to`, `cc`, `bcc` (lower case, without duplicates; `=` is no email id character,
 * so the two forms never overlap) — under a label of its own, so
 * a report to it proves which recipient it is about. A copy sent to several recipients at once can
 * only carry the first form, which proves the email but not the recipient: the bounce mailbox then
 * applies a report only when the email has a single recipient.
 */
const LABEL = 'tern-verp-v1';
const LABEL_PER_RECIPIENT = 'tern-verp-v2';
const MAC_HEX = 16;
/** Recipients a per-recipient address can name (SPEC §22: to + cc + bcc ≤ 50). */
export const VERP_MAX_RECIPIENT_INDEX = 999;

export function verpMac(secret: string, tenantId: string, emailId: string, recipientIndex?: number): string {
  const input =
    recipientIndex === undefined
      ? `${LABEL}\u0000${tenantId}\u0000${emailId}`
      : `${LABEL_PER_RECIPIENT}\u0000${tenantId}\u0000${emailId}\u0000${recipientIndex}`;
  return createHmac('sha256', secret).update(input).digest('hex').slice(0, MAC_HEX);
}

/**
 * The envelope sender of one email of `tenantId` on `bounceHost`; with `recipientIndex`, the
 * envelope sender of its copy to that one recipient.
 */
export function verpAddress(
  secret: string,
  tenantId: string,
  emailId: string,
  bounceHost: string,
  recipientIndex?: number,
): string {
  const index = recipientIndex === undefined ? '' : `=${recipientIndex}`;
  return `b+${emailId}${index}.${verpMac(secret, tenantId, emailId, recipientIndex)}@${bounceHost}`;
}

/**
 * The email id, recipient index (null: the whole-email form) and MAC a VERP local part claims, or
 * null when it is not one. Says nothing about whether it is genuine: {@link verpMatches} decides
 * that against a tenant. Case-insensitive in its frame (an MTA may fold a local part's case; the
 * MAC is compared in lower case).
 */
export function parseVerpLocalPart(
  localPart: string,
): { emailId: string; recipientIndex: number | null; mac: string } | null {
  const perRecipient =
    /^b\+([A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,127})=(0|[1-9]\d{0,2})\.([0-9a-fA-F]{16})$/i.exec(localPart);
  if (perRecipient)
    return {
      emailId: perRecipient[1]!,
      recipientIndex: Number(perRecipient[2]),
      mac: perRecipient[3]!.toLowerCase(),
    };
  const m = /^b\+([A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,127})\.([0-9a-fA-F]{16})$/i.exec(localPart);
  if (!m) return null;
  return { emailId: m[1]!, recipientIndex: null, mac: m[2]!.toLowerCase() };
}

/** True when `mac` is the MAC Tern wrote for this tenant's email (and recipient) (constant time). */
export function verpMatches(
  secret: string,
  tenantId: string,
  emailId: string,
  mac: string,
  recipientIndex?: number | null,
): boolean {
  const expected = Buffer.from(verpMac(secret, tenantId, emailId, recipientIndex ?? undefined));
  const given = Buffer.from(mac.toLowerCase());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
