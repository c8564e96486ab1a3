import { createHash } from 'node:crypto';
import type { SendEmailBody } from '@tern/contracts';
import { isReservedHeader, relayHeaderRefusal } from '@tern/contracts';
import type { AddressObject, ParsedMail } from 'mailparser';

/** An SMTP reply refusing the message: code, enhanced status and a reason for the client. */
export class SmtpRefusal extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Headers that steer Tern, read from the message and never passed on to the recipient. */
export const TERN_HEADERS = {
  tags: 'x-tern-tags',
  projectId: 'x-tern-project-id',
  templateId: 'x-tern-template-id',
} as const;

/**
 * Headers of a submitted message passed on as the send's custom `headers` (threading, list
 * management, the sender's own `X-…`). Everything else (Received, DKIM of the client, Tern's own,
 * recipients) is Tern's to write or none of the recipient's business.
 */
const PASSED_HEADERS = new Set([
  'in-reply-to',
  'references',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'list-id',
  'precedence',
  'auto-submitted',
]);
const MAX_PASSED_HEADERS = 50;

const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (field === undefined ? [] : Array.isArray(field) ? field : [field]).flatMap((f) =>
    f.value.flatMap(function flat(a): { name: string; address: string }[] {
      if (a.group) return a.group.flatMap(flat);
      return a.address ? [{ name: a.name ?? '', address: a.address }] : [];
    }),
  );

/** The first value of a header, unfolded; undefined when absent. */
function headerValue(mail: ParsedMail, name: string): string | undefined {
  const line = mail.headerLines.find((h) => h.key === name)?.line;
  if (line === undefined) return undefined;
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
}

/**
 * Does the raw message open with a header section? A message whose first line is not a header
 * (`Name: value`) is not RFC 5322 mail: refused with a reason instead of guessed at.
 */
export function assertHeaderSection(raw: Buffer): void {
  const head = raw.subarray(0, 1000).toString('latin1');
  if (!/^[!-9;-~]+:/.test(head)) {
    throw new SmtpRefusal(550, '5.6.0 Malformed message: it does not start with a header section');
  }
  if (!/\r?\n\r?\n/.test(raw.subarray(0, 1024 * 1024).toString('latin1'))) {
    throw new SmtpRefusal(550, '5.6.0 Malformed message: no blank line ends the header section');
  }
}

/**
 * A parsed SMTP submission as the body of `POST /emails/send` (SPEC §22). The envelope decides who
 * gets the mail: To/Cc headers name the visible recipients among them, every other envelope
 * recipient is a Bcc. Several To recipients are one message, one email id (`to` an array).
 * Attachments and inline parts become `attachments` (their bytes stored sealed like those of the
 * HTTP route).
 */
export function sendBodyOf(mail: ParsedMail, envelopeTo: readonly string[]): SendEmailBody {
  const froms = addresses(mail.from);
  if (froms.length !== 1) {
    throw new SmtpRefusal(
      550,
      `5.6.0 Malformed message: the From header must name exactly one address (got ${froms.length})`,
    );
  }
  const from = froms[0]!;
  const envelope = envelopeTo.map((a) => a.toLowerCase());
  const inEnvelope = (a: { address: string }) => envelope.includes(a.address.toLowerCase());
  const unique = (list: string[]) => [...new Map(list.map((a) => [a.toLowerCase(), a])).values()];
  let to = unique(
    addresses(mail.to)
      .filter(inEnvelope)
      .map((a) => a.address),
  );
  const cc = unique(
    addresses(mail.cc)
      .filter(inEnvelope)
      .map((a) => a.address),
  ).filter((a) => !to.some((t) => t.toLowerCase() === a.toLowerCase()));
  const shown = new Set([...to, ...cc].map((a) => a.toLowerCase()));
  let bcc = unique(envelopeTo.filter((a) => !shown.has(a.toLowerCase())));
  if (to.length === 0) {
    // Undisclosed recipients: the first envelope recipient is the entry's `to`.
    to = bcc.slice(0, 1);
    bcc = bcc.slice(1);
  }

  // Issue 40 item 5: the same refusal as POST /emails (contracts' relayHeaderRefusal).
  const relayRefusal = relayHeaderRefusal(mail.headerLines.map((h) => h.key));
  if (relayRefusal !== null) throw new SmtpRefusal(550, `5.7.1 ${relayRefusal}`);
  const headers: Record<string, string> = {};
  for (const { key } of mail.headerLines) {
    const wanted = PASSED_HEADERS.has(key) || (key.startsWith('x-') && !key.startsWith('x-tern-'));
    if (!wanted || isReservedHeader(key) || key in headers) continue;
    if (Object.keys(headers).length >= MAX_PASSED_HEADERS) break;
    const value = headerValue(mail, key);
    if (value !== undefined && value !== '') headers[key] = value;
  }
  const tags = headerValue(mail, TERN_HEADERS.tags)
    ?.split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const projectId = headerValue(mail, TERN_HEADERS.projectId);
  const templateId = headerValue(mail, TERN_HEADERS.templateId);
  const replyTo = addresses(mail.replyTo)[0]?.address;
  const name = from.name.replace(/["\\<>\r\n]/g, '').trim();

  const body: Record<string, unknown> = {
    from: name === '' ? from.address : `${name} <${from.address}>`,
    to: to.length === 1 ? to[0] : to,
    ...(cc.length > 0 ? { cc } : {}),
    ...(bcc.length > 0 ? { bcc } : {}),
    ...(replyTo !== undefined ? { replyTo } : {}),
    ...(mail.subject !== undefined ? { subject: mail.subject } : {}),
    ...(typeof mail.html === 'string' && mail.html !== '' ? { html: mail.html } : {}),
    ...(mail.text !== undefined && mail.text !== '' ? { text: mail.text } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(tags && tags.length > 0 ? { tags } : {}),
    ...(projectId ? { projectId } : {}),
    ...(templateId ? { templateId } : {}),
    ...(mail.attachments.length > 0 ? { attachments: mail.attachments.map(attachmentOf) } : {}),
  };
  return body as SendEmailBody;
}

/**
 * A part mailparser found as an attachment, as the `attachments[]` of `POST /emails/send` (SPEC
 * §22): its bytes in base64, its type, and its content id when it is an inline part (disposition
 * `inline`, or inside multipart/related), so it goes out inline again; a part without a file name
 * is named `attachment-<n>`, and a name's control characters and slashes become `_`.
 */
function attachmentOf(part: ParsedMail['attachments'][number], index: number) {
  const name = [...(part.filename ?? '')]
    .map((c) => (c.charCodeAt(0) < 0x20 || c === '\u007f' || c === '/' || c === '\\' ? '_' : c))
    .join('')
    .trim()
    .slice(0, 255);
  const inline = part.related === true || part.contentDisposition === 'inline';
  const cid = part.cid?.replace(/^<|>$/g, '');
  return {
    filename: name === '' ? `attachment-${index + 1}` : name,
    content: part.content.toString('base64'),
    ...(part.contentType ? { contentType: part.contentType } : {}),
    ...(inline && cid ? { contentId: cid } : {}),
  };
}

/**
 * The Idempotency-Key of a submitted message: its Message-ID (SPEC §22: a repeat within 24 h
 * answers the first email id), hashed so any Message-ID fits the key's printable 1..256 characters.
 */
export function idempotencyKeyOfMessage(mail: ParsedMail): string | undefined {
  const id = mail.messageId?.trim();
  if (!id) return undefined;
  return `smtp:${createHash('sha256').update(id).digest('base64url')}`;
}
