import type { ProviderResult } from '../ports.js';

/** The SMTP steps whose reply is about one recipient (nodemailer's `err.command`). */
const RECIPIENT_STEPS = new Set(['RCPT TO', 'DATA']);

export type SmtpError = {
  responseCode?: number;
  code?: string;
  command?: string;
  response?: string;
  message?: string;
  recipient?: string;
  rejectedErrors?: unknown[];
};

/**
 * Classifies a nodemailer error (SPEC §11, issue 24 item 13). Only the relay's answer about the
 * recipient decides its fate: a 5xx to its `RCPT TO` (or to `DATA` for it) is a permanent refusal
 * (bounced hard, the address is suppressed), a 4xx there is temporary (delayed, retried). Every
 * other failure — the connection, TLS, the greeting, `AUTH` (535: a wrong or rotated password),
 * `MAIL FROM`, a message nodemailer could not build — says nothing about the recipient: it is
 * delayed and retried with `fault` set, so the provider is reported failing and nobody is
 * suppressed for it.
 */
/**
 * The relay's own id of an accepted message, from its final answer to DATA (SPEC §21): Postfix,
 * SendGrid and Postmark say `250 … queued as <id>`, SES says `250 Ok <id>`. Notifications of those
 * providers name the message by it, not by the Message-ID header. Undefined when the answer names none.
 */
export function relayMessageId(response: unknown): string | undefined {
  if (typeof response !== 'string') return undefined;
  const queued = /queued as <?([A-Za-z0-9][A-Za-z0-9._@+=-]{3,254})>?/i.exec(response);
  if (queued) return queued[1];
  const ses = /^250 (?:\d\.\d\.\d+ )?Ok ([0-9a-f]{8,}(?:-[0-9a-f]+)+)\s*$/i.exec(response.trim());
  return ses?.[1];
}

export function classifySmtpError(error: unknown, recipient?: string): ProviderResult {
  const e = (error ?? {}) as SmtpError;
  // Every recipient refused: nodemailer throws once and lists each refusal; `to`'s is the one.
  if (recipient !== undefined && Array.isArray(e.rejectedErrors)) {
    const mine = (e.rejectedErrors as SmtpError[]).find(
      (r) => String(r.recipient ?? '').toLowerCase() === recipient.toLowerCase(),
    );
    if (mine) return classifySmtpError(mine);
  }
  const step = e.command ?? 'API';
  const reason = `${step}: ${e.response ?? e.message ?? 'SMTP error'}`.slice(0, 1000);
  if (RECIPIENT_STEPS.has(step) && typeof e.responseCode === 'number') {
    if (e.responseCode >= 500) return { kind: 'bounced', reason };
    if (e.responseCode >= 400) return { kind: 'delayed', reason };
  }
  const code = typeof e.responseCode === 'number' ? String(e.responseCode) : (e.code ?? 'error');
  return { kind: 'delayed', reason, fault: { step, code } };
}
