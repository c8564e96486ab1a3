import { createHash } from 'node:crypto';
import type { ParsedMail } from 'mailparser';

/**
 * The `forward` route action (SPEC §24): the received message re-sent through Tern's send path to
 * the route's address only (never an address the message names: no open relay). This module builds
 * what is sent; the process wires `send` to the one send path (`enqueueSends`), so a forward is an
 * email of the tenant's log like any other (queued, sent, DKIM of a verified domain, bounced…).
 */

/** The header a forward carries: a received message that has it is not forwarded again (no loop). */
export const FORWARDED_HEADER = 'Tern-Forwarded-Inbound';

export interface ForwardAttachment {
  filename: string;
  contentType: string;
  contentId: string | null;
  content: Buffer;
}

/** One forward to send: the email id is derived from the inbound id and the action, so a retry re-sends nothing. */
export interface ForwardRequest {
  tenantId: string;
  emailId: string;
  inboundId: string;
  /** The route's address. */
  to: string;
  /** The receiving address the route matched (a candidate From when its domain is verified). */
  recipient: string;
  /** The original sender, address and display name: the forward's Reply-To. */
  sender: { address: string; name: string | null };
  subject: string;
  text: string | null;
  html: string | null;
  /** Headers of the forward (`Tern-Forwarded-Inbound`, the original's Message-ID). */
  headers: Record<string, string>;
  attachments: ForwardAttachment[];
  at: Date;
}

export type ForwardSender = (request: ForwardRequest) => Promise<void>;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `em_` + 24 base62 characters from SHA-256 of (inbound id, action index): the same email id on every retry. */
export function forwardEmailId(inboundId: string, action: number): string {
  const digest = createHash('sha256').update(`forward\n${inboundId}\n${action}`).digest();
  let id = '';
  for (let i = 0; i < 24; i++) id += BASE62[digest[i]! % 62];
  return `em_${id}`;
}

/** Whether the message is itself a forward made by Tern (a route forwarding to a receiving address would loop). */
export function isForward(parsed: ParsedMail): boolean {
  return parsed.headers.has(FORWARDED_HEADER.toLowerCase());
}

/** A filename as a send takes it (no control character, no path). */
const safeFilename = (name: string) =>
  [...name]
    .map((c) => (c.charCodeAt(0) < 0x20 || c === '\u007f' || c === '/' || c === '\\' ? '_' : c))
    .join('');

/** What one forward action sends. */
export function forwardRequest(opts: {
  tenantId: string;
  inboundId: string;
  action: number;
  to: string;
  recipient: string;
  from: string;
  parsed: ParsedMail;
  at: Date;
}): ForwardRequest {
  const { parsed } = opts;
  const fromValue = Array.isArray(parsed.from) ? parsed.from[0] : parsed.from;
  const name = fromValue?.value[0]?.name?.trim() || null;
  return {
    tenantId: opts.tenantId,
    emailId: forwardEmailId(opts.inboundId, opts.action),
    inboundId: opts.inboundId,
    to: opts.to,
    recipient: opts.recipient,
    sender: { address: opts.from, name },
    subject: (parsed.subject ?? '').replace(/[\r\n]+/g, ' ').slice(0, 998),
    text: parsed.text ?? (typeof parsed.html === 'string' ? null : ''),
    html: typeof parsed.html === 'string' ? parsed.html : null,
    headers: {
      [FORWARDED_HEADER]: opts.inboundId,
      ...(parsed.messageId ? { 'X-Forwarded-Message-Id': parsed.messageId.replace(/[\r\n]/g, '') } : {}),
    },
    attachments: parsed.attachments.map((a, i) => ({
      filename: safeFilename(a.filename ?? `attachment-${i + 1}`),
      contentType: a.contentType || 'application/octet-stream',
      contentId: a.contentId ? a.contentId.replace(/^<|>$/g, '') : null,
      content: a.content,
    })),
    at: opts.at,
  };
}
