// What the bounce mailbox's tests and the sender's VERP tests share: a delivery status notification
// as a relay writes it, raw bytes handed to a mailbox over SMTP, and the events the log holds for
// one email (the Postgres-table log, keyed by email id). The e2e tests send their mail with `sendMailTo`.
import type { DeliveryEvent } from '@tern/contracts';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type pg from 'pg';

export interface DsnParts {
  finalRecipient: string;
  action: string;
  status: string;
  diagnostic: string;
  /** Makes the Message-ID `<dsn-<id>@relay.test>`. */
  id: string;
  /** A `To:` header, when the report names one. */
  to?: string;
  /** Default `Undelivered`. */
  subject?: string;
  /** A human-readable part before the machine-readable one, when the report has one. */
  notice?: string;
}

/** A `multipart/report; report-type=delivery-status` message (RFC 3464), CRLF line ends. */
export function dsnReport(p: DsnParts): string {
  return [
    'From: MAILER-DAEMON@relay.test',
    ...(p.to === undefined ? [] : [`To: ${p.to}`]),
    `Message-ID: <dsn-${p.id}@relay.test>`,
    `Subject: ${p.subject ?? 'Undelivered'}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="B"',
    '',
    ...(p.notice === undefined ? [] : ['--B', 'Content-Type: text/plain', '', p.notice]),
    '--B',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.test',
    '',
    `Final-Recipient: rfc822; ${p.finalRecipient}`,
    `Action: ${p.action}`,
    `Status: ${p.status}`,
    `Diagnostic-Code: smtp; ${p.diagnostic}`,
    '',
    '--B--',
    '',
  ].join('\r\n');
}

/** Sends `message` to the SMTP listener on 127.0.0.1:`port` (plain SMTP, no TLS); the server's answer. */
export async function sendMailTo(port: number, message: Mail.Options): Promise<{ response: string }> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  try {
    return await transport.sendMail(message);
  } finally {
    transport.close();
  }
}

/** Sends raw bytes to the SMTP listener on 127.0.0.1:`port`; its answer (or refusal) as `{ ok, code, response }`. */
export async function deliverRaw(
  port: number,
  to: string[],
  raw: string | Buffer,
  from = '',
): Promise<{ ok: boolean; code?: number | undefined; response: string }> {
  try {
    const info = await sendMailTo(port, { envelope: { from, to }, raw });
    return { ok: true, response: info.response };
  } catch (error) {
    const e = error as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: e.responseCode, response: e.response ?? e.message };
  }
}

/** The events the Postgres-table log holds for one email, in log order. */
export async function loggedEvents(pool: Pick<pg.Pool, 'query'>, emailId: string): Promise<DeliveryEvent[]> {
  const { rows } = await pool.query<{ value: string }>(
    'SELECT value FROM event_log WHERE key = $1 ORDER BY seq',
    [emailId],
  );
  return rows.map((r) => JSON.parse(r.value) as DeliveryEvent);
}
