import { verpAddress } from '@tern/domains';

/**
 * The envelope sender (MAIL FROM, the future Return-Path) of an SMTP send (SPEC §20, §21): a VERP
 * address naming the email, `b+<emailId>.<hmac>@<bounce host>`, so a DSN finds its email by the
 * address it was sent to (the bounce mailbox, services/bounce). The bounce host is the verified
 * domain's bounce subdomain when the message is signed (SPF aligns with the From domain), else
 * BOUNCE_DOMAIN; with neither, null (the relay uses the From address).
 */
export function envelopeSender(
  secret: string,
  tenantId: string,
  emailId: string,
  bounceHost: string | null | undefined,
): string | null {
  return bounceHost ? verpAddress(secret, tenantId, emailId, bounceHost) : null;
}
