/**
 * The connection limits and deadlines every SMTP listener of Tern shares (SMTP submission, the
 * bounce mailbox, the inbound MX): one set, read from the `SMTP_LISTEN_*` variables
 * (packages/config), so an operator tunes them in one place and no listener is forgotten.
 */
export interface SmtpListenerLimits {
  /** Open connections per listener at most; past it a new connection gets `421` and is closed. */
  maxConnections: number;
  /** Open connections per client address (IPv6: per /64) per listener at most; then `421`. */
  maxConnectionsPerClient: number;
  /** A connection silent this long is closed (`421`); any byte restarts it (smtp-server's `socketTimeout`). */
  idleTimeoutMs: number;
  /**
   * A session of a listener that requires AUTH is closed this long after connect unless it has
   * authenticated, however slowly bytes arrive.
   */
  authDeadlineMs: number;
  /** Any session is closed this long after connect, however slowly bytes arrive. */
  sessionDeadlineMs: number;
  /** Failed AUTH attempts one connection may make; the next failure closes it (`421`). */
  maxAuthFailures: number;
  /** RCPT TO accepted per message at most; past it `452` (RFC 5321 §4.5.3.1.10). */
  maxRecipientsPerMessage: number;
  /** RCPT TO commands one connection may send in all; past it `421` and closed. */
  maxRecipientsPerConnection: number;
  /** Messages (DATA) one client address may send per minute to a listener; then `421`. */
  messagesPerMinute: number;
  /** RCPT TO commands one client address may send per minute to a listener; then `421`. */
  recipientsPerMinute: number;
}

/** The defaults (also those of `SMTP_LISTEN_*` in packages/config). */
export const DEFAULT_SMTP_LISTENER_LIMITS: Readonly<SmtpListenerLimits> = Object.freeze({
  maxConnections: 500,
  maxConnectionsPerClient: 20,
  idleTimeoutMs: 60_000,
  authDeadlineMs: 30_000,
  sessionDeadlineMs: 300_000,
  maxAuthFailures: 3,
  maxRecipientsPerMessage: 100,
  maxRecipientsPerConnection: 1000,
  messagesPerMinute: 300,
  recipientsPerMinute: 1000,
});
