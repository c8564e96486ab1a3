import { envelopeOf, parseMailbox, type RenderedMessage } from '@tern/contracts';
import type { MailProvider, ProviderFault, ProviderResult, SendContext, Signing } from '../ports.js';
import type { DkimSigning } from './dkim-sign.js';
import { nodemailer } from './nodemailer-module.js';
import { createRelayGate, pushBackOf, type RelayGate } from './relay-gate.js';
import { sendRaw } from './send-raw.js';
import { composeSigned, sendEach, verpDsn } from './smtp-each.js';
import { classifySmtpError, relayMessageId, type SmtpError } from './smtp-errors.js';

export { classifySmtpError, relayMessageId } from './smtp-errors.js';

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
  /**
   * Pooled connections (SMTP_START_CONNECTIONS, SMTP_MAX_CONNECTIONS, SMTP_MAX_MESSAGES): the
   * messages in flight to the relay — and so the connections open, each reused for `maxMessages`
   * messages before it is closed and a new one opened — start at `startConnections` and adapt to
   * the relay (`RelayGate`: grow while it takes them, halve when it pushes back) up to
   * `maxConnections`. `false`: a new connection per message (still at most that many at once).
   * Default `DEFAULT_SMTP_POOL`. The relay URL's own `pool`, `maxConnections` and `maxMessages`
   * query parameters win over these.
   */
  pool?: SmtpPool | false;
}

export interface SmtpPool {
  maxConnections: number;
  maxMessages: number;
  /** Messages in flight (connections) before the relay has said anything. Default 5. */
  startConnections?: number;
}

/**
 * Issue 45: from 5 connections (nodemailer's own default, what a small relay takes) up to 256 while
 * the relay takes them, 100 messages each.
 */
export const DEFAULT_SMTP_POOL: SmtpPool = { maxConnections: 256, maxMessages: 100, startConnections: 5 };

/** Times a message refused before it reached the relay (a push-back) is handed over again at once. */
const PUSH_BACK_TRIES = 10;

/**
 * The SMTP relay of `SMTP_URL`, through nodemailer: one transaction per recipient when the email
 * has VERP envelope senders (issue 40, item 2; `sendEach`), else one per message, over a pool of
 * connections that are kept open and reused (`pool`).
 */
export function createSmtpProvider(opts: SmtpProviderOptions): MailProvider {
  const timeout = opts.timeoutMs ?? 30_000;
  const url = new URL(opts.url);
  url.searchParams.set('connectionTimeout', String(timeout));
  url.searchParams.set('greetingTimeout', String(timeout));
  url.searchParams.set('socketTimeout', String(timeout));
  const pool = opts.pool ?? DEFAULT_SMTP_POOL;
  const urlCap = Number(url.searchParams.get('maxConnections'));
  const cap = urlCap > 0 ? urlCap : pool === false ? DEFAULT_SMTP_POOL.maxConnections : pool.maxConnections;
  const gate = createRelayGate({
    initial: (pool === false ? undefined : pool.startConnections) ?? DEFAULT_SMTP_POOL.startConnections!,
    max: cap,
  });
  const handOver = handOverThrough(gate);
  // The URL's query (nodemailer's own options) applies over the keys given beside it.
  const transport = nodemailer().createTransport({
    url: url.toString(),
    ...(pool === false
      ? {}
      : { pool: true, maxConnections: pool.maxConnections, maxMessages: pool.maxMessages }),
  });
  return {
    name: 'smtp',
    async send(message: RenderedMessage, context?: SendContext): Promise<ProviderResult> {
      const signing = context?.signing;
      const envelopeFrom = context?.envelopeFrom;
      const from = nodemailerFrom(message.from);
      // Not one mailbox (a row stored before the API parsed `from` with RFC 5322): never sent, as
      // nodemailer would read a list in it and send MAIL FROM the first one (issue 24, item 9).
      if (from === null) return { kind: 'failed', reason: 'from is not a single mailbox' };
      // The envelope is every recipient, each once (SPEC §22): To and Cc are headers, Bcc never is.
      const recipients = envelopeOf(message).map((r) => r.address);
      const to = (recipients[0] ?? '').toLowerCase();
      // Parsed once (RFC 5322, `parseMailbox`) and handed over as name + address: nodemailer
      // never re-reads the string, so it cannot find a second mailbox in it (issue 24, item 9).
      const mail = {
        messageId: message.messageId,
        from,
        to: message.to,
        ...(message.cc.length > 0 ? { cc: message.cc } : {}),
        ...(message.bcc.length > 0 ? { bcc: message.bcc } : {}),
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        subject: message.subject,
        ...(message.html !== null ? { html: message.html } : {}),
        ...(message.text !== null ? { text: message.text } : {}),
        headers: message.headers,
        ...(attachmentsOf(context) ?? {}),
      };
      if (envelopeFrom && context.envelopeFromFor) {
        // One envelope per recipient, each its own VERP address (issue 40, item 2).
        return sendEach(transport, {
          mail,
          ...(signing ? { dkim: dkimOf(signing) } : {}),
          recipients,
          envelopeFromFor: context.envelopeFromFor,
          emailId: context.emailId,
          // The gate bounds them with the rest of the relay's transactions.
          concurrency: cap,
          messageId: message.messageId,
          handOver,
        });
      }
      try {
        // Signed: composed and signed before the hand-over (relaxed/relaxed, rsa-sha256; the RSA
        // step in the thread pool, `signDkim`), and sent as those bytes to an envelope of every
        // recipient. Unsigned: nodemailer composes it and makes the envelope from the headers.
        // A VERP envelope lists every recipient itself, and asks for DSNs (`verpDsn`).
        const verp = envelopeFrom
          ? { envelope: { from: envelopeFrom, to: recipients }, dsn: verpDsn(context.emailId) }
          : undefined;
        const raw = signing ? await composeSigned(mail, dkimOf(signing)) : null;
        const info = await handOver(() =>
          raw
            ? // nodemailer does not read the bytes' Message-ID: given, it makes up none.
              sendRaw(transport, raw, {
                messageId: message.messageId,
                envelope: verp?.envelope ?? {
                  from: typeof from === 'string' ? from : from.address,
                  to: recipients,
                },
                ...(verp ? { dsn: verp.dsn } : {}),
              })
            : transport.sendMail({ ...mail, ...verp }),
        );
        const rejected = ((info.rejected ?? []) as (string | { address: string })[]).map((r) =>
          (typeof r === 'string' ? r : r.address).toLowerCase(),
        );
        const providerMessageId = relayMessageId(info.response);
        if (recipients.length > 1) {
          // Several recipients (SPEC §22): the message went to those the relay took; each one it
          // refused gets its own bounce (a 4xx one soft: Tern does not resend part of a message).
          return {
            kind: 'sent',
            messageId: info.messageId || message.messageId,
            ...(providerMessageId ? { providerMessageId } : {}),
            ...(rejected.length > 0
              ? {
                  followUps: rejected.map((recipient) => ({
                    type: 'email.bounced' as const,
                    ...refusalOf(recipient, info.rejectedErrors),
                    recipient,
                  })),
                }
              : {}),
          };
        }
        // The status is the `to` recipient's (SPEC §11): cc/bcc accepted does not make it sent.
        if (rejected.includes(to)) {
          const why = (info.rejectedErrors ?? []).find(
            (e) => String((e as { recipient?: string }).recipient ?? '').toLowerCase() === to,
          );
          return classifySmtpError(
            why ?? { command: 'RCPT TO', responseCode: 550, message: 'recipient rejected' },
          );
        }
        return {
          kind: 'sent',
          messageId: info.messageId || message.messageId,
          ...(providerMessageId ? { providerMessageId } : {}),
        };
      } catch (error) {
        const refusals = (error as SmtpError | null)?.rejectedErrors;
        if (recipients.length > 1 && Array.isArray(refusals) && refusals.length > 0) {
          // Every one of several recipients refused: each its own bounce, when every refusal is 5xx.
          const each = recipients.map((r) => ({ recipient: r.toLowerCase(), ...refusalOf(r, refusals) }));
          if (each.every((r) => r.bounceType === 'hard'))
            return { kind: 'bounced', reason: each[0]!.reason, recipients: each };
        }
        return classifySmtpError(error, to);
      }
    },
    async check(): Promise<ProviderFault | null> {
      try {
        await transport.verify();
        return null;
      } catch (error) {
        const result = classifySmtpError(error);
        return result.kind === 'delayed' && result.fault ? result.fault : { step: 'API', code: 'error' };
      }
    },
    async close() {
      transport.close();
    },
    capacity: () => ({ inFlight: gate.limit(), latencyMs: gate.latencyMs() }),
  };
}

/**
 * A transaction through the gate (issue 45): its answer tells the gate whether the relay takes
 * more. A push-back that left the message unsent (a 421, a refused connection, a 4xx before any
 * recipient) is handed over again after a short wait while the relay is otherwise taking mail (so
 * the back-pressure of a connection limit costs no retry of the email); a relay that takes nothing
 * gets the error at once, as before (delayed, the provider reported failing).
 */
export function handOverThrough(gate: RelayGate) {
  return async <T>(send: () => Promise<T>): Promise<T> => {
    for (let tries = 1; ; tries++) {
      const result = await gate.run(async () => {
        const startedAt = performance.now();
        try {
          const value = await send();
          gate.taken(startedAt);
          return { ok: true as const, value };
        } catch (error) {
          const pushBack = pushBackOf(error);
          if (pushBack.pushBack) gate.pushedBack(startedAt);
          return { ok: false as const, error, unsent: pushBack.unsent };
        }
      });
      if (result.ok) return result.value;
      if (!result.unsent || tries >= PUSH_BACK_TRIES || !gate.alive(5_000)) throw result.error;
      const waitMs = Math.min(2_000, 50 * 2 ** tries) * (0.5 + Math.random());
      await new Promise((r) => setTimeout(r, waitMs));
    }
  };
}

/** What the relay said to one recipient's RCPT TO: hard for a 5xx, soft otherwise, with its words. */
function refusalOf(
  recipient: string,
  refusals: readonly unknown[] | undefined,
): { bounceType: 'hard' | 'soft'; reason: string } {
  const why = (refusals ?? []).find(
    (e) => String((e as SmtpError).recipient ?? '').toLowerCase() === recipient.toLowerCase(),
  ) as SmtpError | undefined;
  const result = classifySmtpError(
    why ?? { command: 'RCPT TO', responseCode: 550, message: 'recipient rejected' },
  );
  return {
    bounceType: result.kind === 'bounced' ? 'hard' : 'soft',
    reason: 'reason' in result ? result.reason : 'recipient rejected',
  };
}

/** `from` as nodemailer's name + address (no name: the bare address), or null when it is not one mailbox. */
function nodemailerFrom(from: string): string | { name: string; address: string } | null {
  const mailbox = parseMailbox(from);
  if (mailbox === null) return null;
  return mailbox.name === null ? mailbox.address : { name: mailbox.name, address: mailbox.address };
}

/** The DKIM signature of a signing (relaxed/relaxed, rsa-sha256; `signDkim`). */
function dkimOf(signing: Signing): DkimSigning {
  return {
    domainName: signing.dkim.domain,
    keySelector: signing.dkim.selector,
    privateKey: signing.dkim.privateKey,
    headerFieldNames: DKIM_SIGNED_HEADERS,
  };
}

/**
 * The attachments as nodemailer parts: a file with a content id is an inline part
 * (multipart/related) the HTML shows as `cid:<id>`; the others are attachments (multipart/mixed).
 */
function attachmentsOf(context: SendContext | undefined) {
  if (!context?.attachments || context.attachments.length === 0) return null;
  return {
    attachments: context.attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
      ...(a.contentId !== null ? { cid: a.contentId, contentDisposition: 'inline' as const } : {}),
    })),
  };
}
