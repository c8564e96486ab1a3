// A received message parsed for the store: postal-mime for a small message of a common shape,
// mailparser's streams otherwise (docs/inbound.md, "Two parsers, one answer").
import type {
  Attachment,
  AttachmentStream,
  HeaderLines,
  Headers,
  MailParser,
  MessageText,
  ParsedMail,
} from 'mailparser';
import { KEEP_ATTACHMENT_BYTES, loadMailparser, type RawMessage, rawStream } from './parse.js';
import { parseSimple } from './parse-simple.js';

/** Options of every parse of a received message (no link rewriting, no text → HTML). */
const PARSE_OPTIONS = { skipImageLinks: true, skipTextToHtml: true } as const;

/** mailparser's `simpleParser` over the chunks: every attachment's bytes (a forward needs them). */
export const parseFull = async (raw: RawMessage): Promise<ParsedMail> =>
  (await loadMailparser()).simpleParser(rawStream(raw), PARSE_OPTIONS);

type ParserInternals = MailParser & {
  headerLines: HeaderLines;
  otp?: unknown;
  updateImageLinks(replace: unknown, done: (error: unknown, html: string | false) => void): void;
};

/**
 * The message as `simpleParser` answers it (mailparser 3.14.2's own steps), except that an
 * attachment's bytes are kept only up to `keepBytes`: past it they are read and dropped as they
 * are decoded, and the attachment keeps its size and checksum with an empty `content`. A 30 MB
 * attachment is then never held decoded beside the raw message. A small message of a common
 * shape is parsed by postal-mime instead (`parseSimple`), with the same answer.
 */
export async function parseForStore(raw: RawMessage, keepBytes = KEEP_ATTACHMENT_BYTES): Promise<ParsedMail> {
  const simple = await parseSimple(raw);
  if (!simple) return parseStreamed(raw, keepBytes);
  for (const a of simple.attachments) if (a.size > keepBytes) a.content = Buffer.alloc(0);
  return simple;
}

/** `parseForStore` through mailparser's streams, whatever the message. */
export async function parseStreamed(raw: RawMessage, keepBytes = KEEP_ATTACHMENT_BYTES): Promise<ParsedMail> {
  const { MailParser } = await loadMailparser();
  return new Promise((resolve, reject) => {
    const parser = new MailParser(PARSE_OPTIONS) as ParserInternals;
    const mail = { attachments: [] as Attachment[] } as Partial<ParsedMail> & {
      attachments: Attachment[];
    } & Record<string, unknown>;
    let settled = false;
    const settle = (error: unknown, value?: ParsedMail) => {
      if (settled) return;
      settled = true;
      if (error) reject(error);
      else resolve(value!);
    };
    parser.on('error', (error: unknown) => settle(error));
    parser.on('headers', (headers: Headers) => {
      mail.headers = headers;
      mail.headerLines = parser.headerLines;
      if (parser.otp) mail.otp = parser.otp;
    });
    let reading = false;
    const read = (): void => {
      reading = true;
      const data = parser.read() as AttachmentStream | MessageText | null;
      if (data === null) {
        reading = false;
        return;
      }
      if (data.type === 'text') {
        for (const key of ['text', 'html', 'textAsHtml', 'textConversionError'])
          if (key in data) mail[key] = (data as unknown as Record<string, unknown>)[key];
        read();
        return;
      }
      const attachment = data;
      const kept = attachment as unknown as Attachment;
      mail.attachments.push(kept);
      let chunks: Buffer[] | null = [];
      let length = 0;
      attachment.content.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (chunks && length <= keepBytes) chunks.push(chunk);
        else chunks = null;
      });
      attachment.content.on('end', () => {
        kept.content = chunks ? Buffer.concat(chunks, length) : Buffer.alloc(0);
        chunks = null;
        attachment.release?.();
        read();
      });
    };
    parser.on('readable', () => {
      if (!reading) read();
    });
    parser.on('end', () => {
      for (const key of [
        'subject',
        'references',
        'date',
        'to',
        'from',
        'cc',
        'bcc',
        'message-id',
        'in-reply-to',
        'reply-to',
      ]) {
        if (mail.headers?.has(key))
          mail[key.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = mail.headers.get(key);
      }
      // skipImageLinks: the HTML as it is (false when there is none), as simpleParser answers it.
      parser.updateImageLinks(null, (error, html) => {
        if (error) return settle(error);
        mail.html = html;
        settle(null, mail as ParsedMail);
      });
    });
    const input = rawStream(raw);
    input.once('error', (error) => {
      parser.destroy();
      settle(error);
    });
    input.pipe(parser);
  });
}
