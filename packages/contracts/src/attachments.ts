import { z } from 'zod';

/**
 * Attachments of a send (SPEC §22, issue 28): `[{ filename, content, contentType?, contentId? }]`
 * on `POST /emails/send|batch`, the SDK, `/compat/resend` and SMTP submission. `content` is the
 * file as standard base64; `contentId` makes it an inline part that the HTML names as
 * `cid:<contentId>`. The bytes are content: stored sealed apart from the message
 * (`email_attachments`), never in the event log. Decisions: docs/sending.md § Attachments.
 */

/**
 * The whole message at most 40 MB (Resend's rule): the attachments counted as their base64 text
 * (what a MIME message carries) plus subject, html, text and headers. Past it → 413.
 */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;
/** Attachments per message. */
export const MAX_ATTACHMENTS = 100;
/**
 * The request body limit of the routes that take attachments (one send, a batch, their
 * `/compat/resend` twins): the largest message plus room for the JSON around it (escaped html and
 * text of up to 256 KiB, field names). Past it Fastify answers 413 before parsing anything.
 */
export const ATTACHMENT_BODY_LIMIT = MAX_MESSAGE_BYTES + 2 * 1024 * 1024;

/** Standard base64 (RFC 4648 §4) with its padding: what `Buffer#toString('base64')` and btoa write. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
export const isBase64 = (s: string): boolean => s.length % 4 === 0 && BASE64.test(s);

export const attachmentSchema = z
  .strictObject({
    filename: z
      .string({ error: 'attachments[].filename must be a string' })
      .min(1, { error: 'attachments[].filename must not be empty' })
      .max(255, { error: 'attachments[].filename must be at most 255 characters' })
      // A header parameter: no line break, no control character, no path.
      .refine(
        (v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f' || c === '/' || c === '\\'),
        {
          error: 'attachments[].filename must not contain control characters, "/" or "\\"',
        },
      ),
    content: z
      .string({ error: 'attachments[].content must be a base64 string' })
      .refine(isBase64, { error: 'attachments[].content must be standard base64 (RFC 4648, padded)' }),
    contentType: z
      .string()
      .max(255)
      .regex(/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/, {
        error: 'attachments[].contentType must be a MIME type such as application/pdf',
      })
      .optional(),
    contentId: z
      .string()
      .min(1, { error: 'attachments[].contentId must not be empty' })
      .max(255, { error: 'attachments[].contentId must be at most 255 characters' })
      .regex(/^[!-;=?-~]+$/, {
        error: 'attachments[].contentId must be printable ASCII without spaces, "<" or ">" (cid:<contentId>)',
      })
      .optional(),
  })
  .meta({
    description:
      'A file: `content` is its bytes in standard base64. With `contentId` it is an inline part the HTML shows ' +
      'as `<img src="cid:<contentId>">`.',
  });
export type Attachment = z.infer<typeof attachmentSchema>;

export const attachmentsSchema = z
  .array(attachmentSchema, { error: 'attachments must be an array of { filename, content }' })
  .max(MAX_ATTACHMENTS, { error: `attachments must have at most ${MAX_ATTACHMENTS} items` })
  .refine(
    (list) => {
      const ids = list.flatMap((a) => (a.contentId === undefined ? [] : [a.contentId]));
      return new Set(ids).size === ids.length;
    },
    { error: 'attachments[].contentId must be unique within the message' },
  );

/**
 * What is known of an attachment without its bytes: kept with the send's content
 * (`outgoing_emails.message`) and the sandbox's copy; the bytes stay in `email_attachments`.
 */
export const attachmentMetaSchema = z.object({
  filename: z.string(),
  contentType: z.string(),
  contentId: z.string().nullable(),
  /** Bytes of the file (decoded). */
  size: z.number().int(),
  /** SHA-256 of the bytes, hex. */
  sha256: z.string(),
});
export type AttachmentMeta = z.infer<typeof attachmentMetaSchema>;

/**
 * The size of a message as the 40 MB rule counts it: every attachment's base64 text plus the
 * UTF-8 bytes of subject, html, text and headers.
 */
export function messageBytes(body: {
  subject?: string | undefined;
  html?: string | undefined;
  text?: string | undefined;
  headers?: Record<string, string> | undefined;
  attachments?: readonly { content: string }[] | undefined;
}): number {
  const utf8 = (s: string | undefined) => (s === undefined ? 0 : Buffer.byteLength(s, 'utf8'));
  let n = utf8(body.subject) + utf8(body.html) + utf8(body.text);
  if (body.headers) n += utf8(JSON.stringify(body.headers));
  for (const a of body.attachments ?? []) n += a.content.length;
  return n;
}

/** The content type of a file by its name when the caller gave none (the common ones; else octet-stream). */
export function contentTypeOf(filename: string): string {
  const ext = filename.slice(filename.lastIndexOf('.') + 1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}

const CONTENT_TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  txt: 'text/plain',
  csv: 'text/csv',
  html: 'text/html',
  ics: 'text/calendar',
  json: 'application/json',
  zip: 'application/zip',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};
