import { VERP_MAX_RECIPIENT_INDEX, verpAddress } from '@tern/sending-domains';

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

/**
 * The per-recipient envelope senders of an email (issue 40, item 2): for a recipient of
 * `envelope` (the stored email's to, cc, bcc, each once — the order services/bounce resolves an
 * index in), `b+<emailId>=<n>.<hmac>@<bounce host>`; for an address not in it, the whole-email form.
 */
export function envelopeSenders(
  secret: string,
  tenantId: string,
  emailId: string,
  bounceHost: string,
  envelope: readonly { address: string }[],
): (recipient: string) => string {
  const index = new Map<string, number>();
  envelope.forEach((r, i) => {
    const key = r.address.toLowerCase();
    if (!index.has(key)) index.set(key, i);
  });
  return (recipient) => {
    const i = index.get(recipient.toLowerCase());
    return verpAddress(
      secret,
      tenantId,
      emailId,
      bounceHost,
      i !== undefined && i <= VERP_MAX_RECIPIENT_INDEX ? i : undefined,
    );
  };
}
