// Headers a tenant may not set because they steer the operator's relay or forge a message's trace
// (issue 40 item 5); `isReservedHeader` of emails.ts includes them.

/**
 * Headers that steer the operator's relay account (issue 40 item 5): SES's configuration set and
 * sending authorisation, Postmark's message stream, Mailgun's options (drop, variables, tracking),
 * SendGrid's X-SMTPAPI, Mandrill's, SparkPost's and Mailjet's. A tenant could pick a
 * configuration set that never reports bounces, or have its mail dropped after Tern counted it
 * sent. Refused on every path: `POST /emails*` and the Resend compatibility answer 400, SMTP
 * submission 550 5.7.1 (`relayHeaderRefusal`), and the sender leaves them out of mail queued
 * before this rule.
 */
export const RELAY_HEADER_PREFIXES = [
  'x-ses-',
  'x-pm-',
  'x-mailgun-',
  'x-smtpapi',
  'x-sg-',
  'x-mc-',
  'x-msys-',
  'x-mj-',
  'x-mailjet-',
] as const;

/**
 * Trace and receipt headers a message gets on its way, never from its author: `Received`, `ARC-*`,
 * `Resent-*`, `Authentication-Results` (a forged verdict), `Disposition-Notification-To` and
 * `Return-Receipt-To` (read receipts to an address of the sender's choosing). Refused over HTTP;
 * SMTP submission never passes them on (only `X-…` and the threading and list headers are).
 */
const TRACE_HEADERS = new Set([
  'received',
  'authentication-results',
  'disposition-notification-to',
  'return-receipt-to',
  'delivered-to',
  'x-original-to',
]);
const TRACE_HEADER_PREFIXES = ['arc-', 'resent-'] as const;

/** Whether header `name` steers the relay account (any case). */
export const isRelayHeader = (name: string): boolean => {
  const lower = name.toLowerCase();
  return RELAY_HEADER_PREFIXES.some((p) => lower.startsWith(p));
};

/** Whether header `name` is a trace or receipt header (any case). */
export const isTraceHeader = (name: string): boolean => {
  const lower = name.toLowerCase();
  return TRACE_HEADERS.has(lower) || TRACE_HEADER_PREFIXES.some((p) => lower.startsWith(p));
};

/**
 * The one answer of every path to a message setting a relay header: the reason naming the first
 * one, or null. HTTP says it in its 400, SMTP submission in its 550 5.7.1.
 */
export function relayHeaderRefusal(names: Iterable<string>): string | null {
  for (const name of names)
    if (isRelayHeader(name))
      return `header ${name} steers the relay account and is not accepted (any X-SES-*, X-PM-*, X-Mailgun-*, X-SMTPAPI, X-SG-*, X-MC-*, X-MSYS-*, X-MJ-*, X-Mailjet-*)`;
  return null;
}
