import { Readable } from 'node:stream';
import type { SentMessageInfo, Transporter } from 'nodemailer';
import type MailMessage from 'nodemailer/lib/mailer/mail-message';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import { mimeNode } from './nodemailer-module.js';

export interface RawTransaction {
  /** The message's Message-ID (nodemailer reads none from the bytes): the pool's log and `info.messageId`. */
  messageId: string;
  /** MAIL FROM and RCPT TO, as `sendMail`'s `envelope`. */
  envelope: { from: string; to: readonly string[] };
  /** RFC 3461 parameters of MAIL FROM and RCPT TO, as `sendMail`'s `dsn`. */
  dsn?: SMTPConnection.DSNOptions;
}

/**
 * A message Tern composed (and signed) handed to the relay as those bytes, through the transport
 * `createTransport` made (its pool, its connections), without `sendMail` around it (issue 45
 * item 1). For bytes given as `raw`, `sendMail` builds a message object, a MIME tree holding them,
 * runs the plugin stages and parses the envelope again, for every transaction: ≈ 100 µs of the
 * sender's thread per recipient, against ≈ 25 µs for what the transport reads. That is what a
 * transport's `send(mail, callback)` documents (nodemailer's `Transport`): `mail.data` (`dsn`) and
 * `mail.message`'s envelope, Message-ID and stream; they are given here. The envelope is parsed by
 * nodemailer's own `MimeNode#setEnvelope` as `sendMail` does (punycode domains, quoted local
 * parts); the stream is the bytes as they are (the final line break `sendMail` adds when one is
 * missing changes no byte on the wire: the end of DATA supplies it).
 */
export function sendRaw<T = SentMessageInfo>(
  transport: Transporter<T>,
  raw: Buffer,
  tx: RawTransaction,
): Promise<T> {
  // What `sendMail` does first: a proxy of the transport's options (`?proxy=` in SMTP_URL) is the
  // transport's socket handler from the first message on.
  if (typeof transport.getSocket === 'function') {
    transport.transporter.getSocket = transport.getSocket;
    transport.getSocket = false;
  }
  const envelope = new (mimeNode())()
    .setEnvelope({ from: tx.envelope.from, to: [...tx.envelope.to] })
    .getEnvelope();
  const message = {
    getEnvelope: () => envelope,
    messageId: () => tx.messageId,
    getHeader: (key: string) => (key.toLowerCase() === 'message-id' ? tx.messageId : undefined),
    // A fresh stream each time: the pool asks again when it moves the message to another connection.
    createReadStream: () => {
      const stream = new Readable({ read() {} });
      stream.push(raw);
      stream.push(null);
      return stream;
    },
  };
  const mail = { data: tx.dsn ? { dsn: tx.dsn } : {}, message } as unknown as MailMessage<T>;
  return new Promise((resolve, reject) => {
    transport.transporter.send(mail, (error, info) => (error ? reject(error) : resolve(info as T)));
  });
}
