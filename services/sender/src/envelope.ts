/**
 * The envelope sender (MAIL FROM, the future Return-Path) of a message signed for a verified
 * domain: an address on the domain's bounce subdomain, so SPF aligns with the From domain
 * (relaxed DMARC alignment) and bounces come back to the MX Tern asked for (SPEC §20).
 *
 * The one place that chooses it: delivery feedback (SPEC §21) makes it a VERP address that names
 * the email (`b+<emailId>.<hmac>@…`); today it is one plain mailbox.
 */
export function envelopeSender(bounceDomain: string, _emailId: string): string {
  return `bounces@${bounceDomain}`;
}
