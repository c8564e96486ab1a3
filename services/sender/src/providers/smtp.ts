import { parseMailbox, type RenderedMessage } from '@tern/contracts';
import nodemailer from 'nodemailer';
import type { MailProvider, ProviderResult, SendContext } from '../ports.js';

/**
 * The headers a signature covers (SPEC §20, relaxed/relaxed, rsa-sha256): the addresses, subject,
 * date and id, the MIME structure, and the one-click unsubscribe pair (RFC 8058 asks that it be
 * signed). Only the ones present are listed in `h=`.
 */
export const DKIM_SIGNED_HEADERS = [
  'From',
  'To',
  'Cc',
  'Subject',
  'Date',
  'Message-ID',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
].join(':');

export interface SmtpProviderOptions {
  /** `smtp://` or `smtps://user:pass@host:port` (SMTP_URL). */
  url: string;
  /** Per-connection timeouts; must stay well below the sender's lease. Default 30 s. */
  timeoutMs?: number;
}

/** Connection-level failures: the relay could not be reached or dropped us, so try again later. */
const TEMPORARY_CODES = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'ECONNREFUSED',
  'ECONNRESET',
]);

/**
 * Classifies a nodemailer error (SPEC §11): an SMTP 5xx is a permanent refusal (bounced hard),
 * a 4xx or a connection error is temporary (delayed, retried); anything else is temporary too,
 * since it says nothing about the recipient.
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

export function classifySmtpError(error: unknown): ProviderResult {
  const e = error as { responseCode?: number; code?: string; response?: string; message?: string };
  const reason = (e.response ?? e.message ?? 'SMTP error').slice(0, 1000);
  if (typeof e.responseCode === 'number') {
    if (e.responseCode >= 500) return { kind: 'bounced', reason };
    if (e.responseCode >= 400) return { kind: 'delayed', reason };
  }
  if (e.code && TEMPORARY_CODES.has(e.code)) return { kind: 'delayed', reason: `${e.code}: ${reason}` };
  return { kind: 'delayed', reason };
}

/** The SMTP relay of `SMTP_URL`, through nodemailer. One transaction per message. */
export function createSmtpProvider(opts: SmtpProviderOptions): MailProvider {
  const timeout = opts.timeoutMs ?? 30_000;
  const url = new URL(opts.url);
  url.searchParams.set('connectionTimeout', String(timeout));
  url.searchParams.set('greetingTimeout', String(timeout));
  url.searchParams.set('socketTimeout', String(timeout));
  const transport = nodemailer.createTransport(url.toString());
  return {
    name: 'smtp',
    async send(message: RenderedMessage, context?: SendContext): Promise<ProviderResult> {
      const signing = context?.signing;
      const envelopeFrom = context?.envelopeFrom;
      const from = nodemailerFrom(message.from);
      // Not one mailbox (a row stored before the API parsed `from` with RFC 5322): never sent, as
      // nodemailer would read a list in it and send MAIL FROM the first one (issue 24, item 9).
      if (from === null) return { kind: 'failed', reason: 'from is not a single mailbox' };
      try {
        const info = await transport.sendMail({
          ...(signing
            ? {
                // nodemailer signs relaxed/relaxed with rsa-sha256.
                dkim: {
                  domainName: signing.dkim.domain,
                  keySelector: signing.dkim.selector,
                  // A parsed key: node's signer takes it as well as a PEM (nodemailer's types say string).
                  privateKey: signing.dkim.privateKey as unknown as string,
                  headerFieldNames: DKIM_SIGNED_HEADERS,
                },
              }
            : {}),
          ...(envelopeFrom
            ? {
                // A custom envelope lists every recipient itself.
                envelope: { from: envelopeFrom, to: [message.to, ...message.cc, ...message.bcc] },
                // RFC 3461: a DSN-capable relay reports failure, delay and success to the VERP
                // address (SPEC §21), with the headers only and the email id as ENVID.
                dsn: {
                  id: context.emailId,
                  return: 'headers',
                  notify: ['failure', 'delay', 'success'],
                },
              }
            : {}),
          messageId: message.messageId,
          // Parsed once (RFC 5322, `parseMailbox`) and handed over as name + address: nodemailer
          // never re-reads the string, so it cannot find a second mailbox in it (issue 24, item 9).
          from,
          to: message.to,
          ...(message.cc.length > 0 ? { cc: message.cc } : {}),
          ...(message.bcc.length > 0 ? { bcc: message.bcc } : {}),
          ...(message.replyTo ? { replyTo: message.replyTo } : {}),
          subject: message.subject,
          ...(message.html !== null ? { html: message.html } : {}),
          ...(message.text !== null ? { text: message.text } : {}),
          headers: message.headers,
        });
        // The status is the `to` recipient's (SPEC §11): cc/bcc accepted does not make it sent.
        const rejected = ((info.rejected ?? []) as (string | { address: string })[]).map((r) =>
          (typeof r === 'string' ? r : r.address).toLowerCase(),
        );
        if (rejected.includes(message.to.toLowerCase())) {
          const why = (info.rejectedErrors ?? []).find(
            (e) =>
              String((e as { recipient?: string }).recipient ?? '').toLowerCase() ===
              message.to.toLowerCase(),
          );
          return classifySmtpError(why ?? { responseCode: 550, message: 'recipient rejected' });
        }
        const providerMessageId = relayMessageId(info.response);
        return {
          kind: 'sent',
          messageId: info.messageId || message.messageId,
          ...(providerMessageId ? { providerMessageId } : {}),
        };
      } catch (error) {
        return classifySmtpError(error);
      }
    },
    async close() {
      transport.close();
    },
  };
}

/** `from` as nodemailer's name + address (no name: the bare address), or null when it is not one mailbox. */
function nodemailerFrom(from: string): string | { name: string; address: string } | null {
  const mailbox = parseMailbox(from);
  if (mailbox === null) return null;
  return mailbox.name === null ? mailbox.address : { name: mailbox.name, address: mailbox.address };
}
