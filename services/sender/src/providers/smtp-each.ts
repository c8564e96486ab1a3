import type { Transporter } from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { ProviderResult } from '../ports.js';
import { type DkimSigning, signDkim } from './dkim-sign.js';
import { mailComposer } from './nodemailer-module.js';
import { sendRaw } from './send-raw.js';
import { classifySmtpError, relayMessageId } from './smtp-errors.js';

/** One recipient's own transaction: taken, refused (its RCPT TO / DATA answer) or a fault. */
type Each =
  | { recipient: string; kind: 'sent'; providerMessageId?: string }
  | { recipient: string; kind: 'refused'; result: ProviderResult }
  | { recipient: string; kind: 'fault'; result: ProviderResult };

export interface SendEachOptions {
  /** The message (headers, body, attachments; no envelope, no DKIM): composed once. */
  mail: Mail.Options;
  dkim?: DkimSigning;
  /** The envelope recipients, to + cc + bcc, each once, `to` first. */
  recipients: readonly string[];
  /** The per-recipient VERP envelope sender of each. */
  envelopeFromFor: (recipient: string) => string;
  /** The ENVID of the DSNs asked for (RFC 3461). */
  emailId: string;
  /** How many transactions at once: the pool's connections (the pool bounds them anyway). */
  concurrency: number;
  messageId: string;
  /** Each transaction goes through it (the relay's gate, `handOverThrough`). */
  handOver?: <T>(send: () => Promise<T>) => Promise<T>;
}

/**
 * One SMTP transaction per recipient (issue 40, item 2): the same bytes (composed once, so Bcc is
 * in no header and every copy is identical), each with its own VERP envelope sender, so a DSN or a
 * complaint to it proves which recipient it is about. The results combine into what one
 * transaction to all of them reports (SPEC §22): sent when any recipient was taken, each refused
 * one its own bounce (a 4xx or a fault after others were taken: soft — Tern does not resend part
 * of a message); none taken: every refusal 5xx → bounced, a fault → delayed with the fault (the
 * whole email is retried, nobody got it), else the `to` recipient's answer.
 */
export async function sendEach(transport: Transporter, opts: SendEachOptions): Promise<ProviderResult> {
  // Signed: composed and signed once (the signature in the thread pool, `signDkim`), the copies
  // identical. Unsigned with one recipient: nodemailer composes it in its own transaction, as it does
  // for any sendMail (the same composer, so the same bytes).
  const content: Mail.Options | Buffer =
    opts.recipients.length === 1 && !opts.dkim ? opts.mail : await composeSigned(opts.mail, opts.dkim);
  const results: Each[] = new Array(opts.recipients.length);
  let next = 0;
  const worker = async () => {
    while (next < opts.recipients.length) {
      const i = next++;
      const recipient = opts.recipients[i]!;
      results[i] = await sendOne(transport, content, recipient, opts);
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(opts.concurrency, opts.recipients.length)) }, worker),
  );
  const taken = results.filter((r) => r.kind === 'sent');
  if (taken.length > 0) {
    const refused = results.filter((r) => r.kind !== 'sent');
    const providerMessageId = taken[0]!.providerMessageId;
    return {
      kind: 'sent',
      messageId: opts.messageId,
      ...(providerMessageId ? { providerMessageId } : {}),
      ...(refused.length > 0
        ? {
            followUps: refused.map((r) => ({
              type: 'email.bounced' as const,
              bounceType: r.result.kind === 'bounced' ? ('hard' as const) : ('soft' as const),
              reason: 'reason' in r.result ? r.result.reason : 'recipient refused',
              recipient: r.recipient.toLowerCase(),
            })),
          }
        : {}),
    };
  }
  const fault = results.find((r) => r.kind === 'fault');
  if (fault) return fault.result;
  const each = results.map((r) => ({
    recipient: r.recipient.toLowerCase(),
    bounceType: r.kind !== 'sent' && r.result.kind === 'bounced' ? ('hard' as const) : ('soft' as const),
    reason: r.kind !== 'sent' && 'reason' in r.result ? r.result.reason : 'recipient refused',
  }));
  if (results.length > 1 && each.every((r) => r.bounceType === 'hard'))
    return { kind: 'bounced', reason: each[0]!.reason, recipients: each };
  const first = results[0]!;
  return first.kind === 'sent' ? { kind: 'sent', messageId: opts.messageId } : first.result;
}

/**
 * The DSNs a VERP envelope asks for (RFC 3461): a DSN-capable relay reports failure, delay and
 * success to the VERP address (SPEC §21), with the headers only and the email id as ENVID.
 */
export function verpDsn(emailId: string): SMTPConnection.DSNOptions {
  return { id: emailId, return: 'headers', notify: ['failure', 'delay', 'success'] };
}

/**
 * The message composed, and signed when `dkim` is given: what nodemailer's sendMail would send,
 * once; the RSA signature made in the thread pool (`signDkim`: nodemailer's signer's bytes).
 */
export async function composeSigned(mail: Mail.Options, dkim: DkimSigning | undefined): Promise<Buffer> {
  const raw = await new (mailComposer())(mail).compile().build();
  return dkim ? signDkim(raw, dkim) : raw;
}

async function sendOne(
  transport: Transporter,
  content: Mail.Options | Buffer,
  recipient: string,
  opts: SendEachOptions,
): Promise<Each> {
  try {
    const handOver = opts.handOver ?? (<T>(send: () => Promise<T>) => send());
    const envelope = { from: opts.envelopeFromFor(recipient), to: [recipient] };
    const dsn = verpDsn(opts.emailId);
    const info = await handOver(() =>
      Buffer.isBuffer(content)
        ? // The id beside the bytes: nodemailer does not read them, and would make one up.
          sendRaw(transport, content, { messageId: opts.messageId, envelope, dsn })
        : transport.sendMail({ ...content, envelope, dsn }),
    );
    const rejected = ((info.rejected ?? []) as (string | { address: string })[]).map((r) =>
      (typeof r === 'string' ? r : r.address).toLowerCase(),
    );
    if (rejected.includes(recipient.toLowerCase())) {
      const why = (info.rejectedErrors ?? [])[0];
      const result = classifySmtpError(
        why ?? { command: 'RCPT TO', responseCode: 550, message: 'recipient rejected' },
      );
      return { recipient, kind: 'refused', result };
    }
    const providerMessageId = relayMessageId(info.response);
    return { recipient, kind: 'sent', ...(providerMessageId ? { providerMessageId } : {}) };
  } catch (error) {
    const result = classifySmtpError(error, recipient);
    return result.kind === 'delayed' && result.fault
      ? { recipient, kind: 'fault', result }
      : { recipient, kind: 'refused', result };
  }
}
