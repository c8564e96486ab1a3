// A small message of a common shape parsed by postal-mime, in mailparser's shape and with its
// values (docs/inbound.md, "Two parsers, one answer").
import { createHash } from 'node:crypto';
import { onFirstUse } from '@tern/kernel';
import type { ParsedMail } from 'mailparser';
import { concatRaw, loadMailparser, type RawMessage } from './parse.js';

/** postal-mime and libmime, loaded with the first message parsed, as mailparser is. */
const loadPostalMime = onFirstUse(() => import('postal-mime'));
const loadLibmime = onFirstUse(() => import('libmime'));

/** Messages up to this size may be parsed by postal-mime (`parseSimple`); larger ones stream through mailparser. */
export const SIMPLE_PARSE_BYTES = 256 * 1024;

/** The parts of postal-mime 4.0.0's parser `parseSimple` reads after a parse (its MIME tree and text map). */
interface PostalNode {
  contentType: { parsed: { value: string; params: Record<string, string> }; multipart: string | false };
  contentDisposition: { parsed: { value: string } };
  contentTransferEncoding: { encoding: string };
  parentNode?: PostalNode;
  childNodes: PostalNode[];
  headers: { key: string; value: string }[];
  rawHeaderLines: { key: string; line: string }[];
}
interface PostalInternals {
  root?: PostalNode;
  textMap?: Map<unknown, unknown>;
  isInlineTextNode?(node: PostalNode): boolean;
}

/**
 * The charset both parsers decode alike (postal-mime decodes with TextDecoder, mailparser with
 * iconv-lite); US-ASCII too when the text is ASCII (TextDecoder reads it as windows-1252,
 * mailparser as UTF-8).
 */
const SAME_CHARSET = /^utf-?8$/i;
const ASCII_CHARSET = /^us-ascii$/i;
/**
 * An encoded word in another charset; the first segment of an RFC 2231 value (`name*=` or
 * `name*0*=`, the one that names the charset) in another charset. Both are linear in the header's
 * length: a first version's `\*=…[^']*'` scanned from each `*=` on to the next quote (17 s of CPU
 * on a header of 125 000 of them).
 */
const OTHER_CHARSET_WORD = /=\?(?!utf-?8(?:\*[^?]*)?\?)[^?]*\?[bq]\?/i;
const OTHER_CHARSET_PARAM = /(?:^|[;\s])[\w.-]+\*(?:0\*)?=\s*"?(?!utf-?8')/i;
/** A header line as RFC 5322 has it: a name of printable characters, no blank before the colon. */
const HEADER_LINE = /^[!-9;-~]+:/;
/** Raw 8-bit header bytes: mailparser reads them as Latin-1 in its header lines, postal-mime as UTF-8. */
const NOT_ASCII = /[\u0080-\uffff]/;
const SIMPLE_MULTIPART = new Set(['mixed', 'alternative', 'related']);
const SIMPLE_DISPOSITION = new Set(['', 'inline', 'attachment']);

interface TextParts {
  plain?: PostalNode;
  html?: PostalNode;
  quotedPrintable: boolean;
}

/**
 * The message's inline text parts (at most one plain, one HTML) when postal-mime's reading of it
 * is one mailparser gives too — well-formed header lines; multipart mixed, alternative or related
 * only, each closed by its boundary; no nested message, report or calendar part; text in UTF-8 or
 * ASCII, not flowed; attachments in base64; one body, holding its own part of each text type
 * present (the parsers turn HTML into text, and join text parts, differently) — else null.
 * `text` is the message as Latin-1.
 */
function simpleTextParts(p: PostalInternals, text: string): TextParts | null {
  if (!p.root || !p.textMap || !p.isInlineTextNode || p.textMap.size > 1) return null;
  // No header at all: mailparser answers one empty header line.
  if (p.root.rawHeaderLines.length === 0) return null;
  const parts: TextParts = { quotedPrintable: false };
  const nodes = [p.root];
  for (let node = nodes.pop(); node; node = nodes.pop()) {
    for (const h of node.headers)
      if (NOT_ASCII.test(h.value) || OTHER_CHARSET_WORD.test(h.value) || OTHER_CHARSET_PARAM.test(h.value))
        return null;
    // A line without a colon, an mbox `From ` line, a blank before the colon: the parsers name
    // such a header differently.
    if (!node.rawHeaderLines.every((h) => HEADER_LINE.test(h.line))) return null;
    if (node.contentType.multipart) {
      if (!SIMPLE_MULTIPART.has(node.contentType.multipart)) return null;
      // Without its closing boundary the last part runs to the end, and mailparser keeps its line end.
      const boundary = node.contentType.parsed.params.boundary;
      if (!boundary || !text.includes(`--${boundary}--`)) return null;
      nodes.push(...node.childNodes);
      continue;
    }
    const type = node.contentType.parsed.value;
    // A Content-Type without a type (mailparser answers `false` for it).
    if (!type.includes('/')) return null;
    if (type.startsWith('message/') || type === 'text/calendar' || type === 'application/ics') return null;
    if (!SIMPLE_DISPOSITION.has(node.contentDisposition.parsed.value)) return null;
    if (type.startsWith('text/')) {
      const { charset, format } = node.contentType.parsed.params;
      if (charset && !SAME_CHARSET.test(charset) && !ASCII_CHARSET.test(charset)) return null;
      if (/^flowed$/i.test(format ?? '')) return null;
    }
    if (p.isInlineTextNode(node)) {
      const kind = type === 'text/html' ? 'html' : 'plain';
      if (parts[kind]) return null;
      parts[kind] = node;
      if (node.contentTransferEncoding.encoding === 'quoted-printable') parts.quotedPrintable = true;
    } else if (node.contentTransferEncoding.encoding !== 'base64') {
      // An attachment sent line by line: mailparser keeps its line ends as sent, postal-mime does not.
      return null;
    }
  }
  // mailparser answers HTML-only mail with a text made from the HTML; postal-mime makes another.
  if (parts.html && !parts.plain) return null;
  return parts;
}

/**
 * A text part's body as mailparser gives it: line ends as `\n`, and without the line end
 * postal-mime adds after the last line of a part sent line by line (7bit, 8bit, quoted-printable)
 * when the message had none there (the line end before a boundary belongs to the boundary); null
 * for 8-bit text said to be US-ASCII.
 */
function mailparserText(value: string, node: PostalNode, rawEndsWithLf: boolean): string | null {
  if (ASCII_CHARSET.test(node.contentType.parsed.params.charset ?? '') && NOT_ASCII.test(value)) return null;
  const text = value.replace(/\r?\n/g, '\n');
  const lineByLine = node.contentTransferEncoding.encoding !== 'base64';
  const lastLineEnded = node.parentNode === undefined && rawEndsWithLf;
  return lineByLine && !lastLineEnded && text.endsWith('\n') ? text.slice(0, -1) : text;
}

/** A charset named other than UTF-8 or US-ASCII (a part's parameter; an encoded word is `OTHER_CHARSET_WORD`). */
const OTHER_CHARSET_NAMED = /\bcharset\s*=\s*"?(?!(?:utf-?8|us-ascii)\b)/i;
const HTML_PART = /^content-type:\s*text\/html/im;
const PLAIN_PART = /^content-type:\s*text\/plain/im;

/** A CR anywhere but before an LF (postal-mime drops one at a line's end, mailparser keeps it). */
const BARE_CR = /\r(?!\n)/;

/**
 * Whether the raw message (as Latin-1) shows a shape `simpleTextParts` would decline, without
 * parsing it: a stray CR, another charset named anywhere, or an HTML part and no plain one.
 * Anywhere means in a body too: such a message is only parsed by mailparser, as before. Each
 * pattern is linear.
 */
function declinedUnparsed(text: string): boolean {
  return (
    BARE_CR.test(text) ||
    OTHER_CHARSET_NAMED.test(text) ||
    OTHER_CHARSET_WORD.test(text) ||
    (HTML_PART.test(text) && !PLAIN_PART.test(text))
  );
}

/** Headers mailparser's map holds as an object (a date, an address list, a parsed value) whatever their value. */
const ALWAYS_KEPT = new Set([
  'date',
  'references',
  'content-type',
  'content-disposition',
  'dkim-signature',
  'from',
  'to',
  'cc',
  'bcc',
  'sender',
  'reply-to',
  'delivered-to',
  'return-path',
  'disposition-notification-to',
  'priority',
  'x-priority',
  'x-msmail-priority',
  'importance',
]);
const PRIORITY = new Set(['priority', 'x-priority', 'x-msmail-priority', 'importance']);

/** The name mailparser's header map gives a header (the priorities as `priority`, List-* as `list`). */
const mapName = (key: string) => (PRIORITY.has(key) ? 'priority' : key.startsWith('list-') ? 'list' : key);

/** Whether mailparser's header map holds a header of this value (it leaves out an empty one). */
function mailparserKeeps(key: string, value: string, decoded: (v: string) => string): boolean {
  if (ALWAYS_KEPT.has(key)) return true;
  if (key === 'subject' || key === 'message-id' || key === 'in-reply-to') return decoded(value) !== '';
  return value !== '';
}

/** mailparser's form of a Message-ID (angle brackets added when missing), or undefined. */
function messageIdForm(value: string): string | undefined {
  let id = value;
  if (!id) return undefined;
  if (!id.startsWith('<')) id = `<${id}`;
  if (!id.endsWith('>')) id += '>';
  return id;
}

/**
 * A small message of a common shape parsed by postal-mime (about a third of mailparser's CPU;
 * bench/README.md), answered in the shape and with the values mailparser gives through
 * `parseForStore` — or null when it is of another shape (`simpleTextParts`), for mailparser to
 * parse. Addresses go through mailparser's own `parseAddressHeader`, an attachment's type through
 * libmime as mailparser's does. `parse-simple.unit.test.ts` compares both over a corpus.
 */
export async function parseSimple(raw: RawMessage): Promise<ParsedMail | null> {
  if (raw.size > SIMPLE_PARSE_BYTES) return null;
  const [{ default: PostalMime }, { parseAddressHeader }, { default: libmime }] = await Promise.all([
    loadPostalMime(),
    loadMailparser(),
    loadLibmime(),
  ]);
  const bytes = concatRaw(raw);
  const latin1 = bytes.toString('latin1');
  // What is seen in the raw message is declined before postal-mime parses it (mailparser would
  // parse it a second time): a stray CR, another charset named, HTML without a plain part.
  if (declinedUnparsed(latin1)) return null;
  const parser = new PostalMime();
  let email: Awaited<ReturnType<typeof parser.parse>>;
  try {
    email = await parser.parse(bytes);
  } catch {
    // Whatever postal-mime refuses (its limits, a malformed part) is mailparser's to answer.
    return null;
  }
  let parts: TextParts | null;
  try {
    parts = simpleTextParts(parser as unknown as PostalInternals, latin1);
  } catch {
    // postal-mime's internals read here are not its API: if a version changes them, decline.
    parts = null;
  }
  if (!parts) return null;
  // mailparser's quoted-printable decoder drops the blanks that end a line, postal-mime's keeps
  // them; and a part whose last line is a soft break (`=` before a boundary or the end) ends
  // without the line end `mailparserText` takes off.
  if (parts.quotedPrintable && /[ \t](?:\r?\n|$)|=(?:\r?\n(?=--)|\r?\n?$)/.test(latin1)) return null;
  const endsWithLf = bytes[bytes.length - 1] === 10;
  // Header values as mailparser reads them: libmime's unfolding (a fold and the blanks after it
  // become one space), then its decoding per header.
  const decoded = (value: string) => {
    try {
      return libmime.decodeWords(value);
    } catch {
      return value;
    }
  };
  // The header map holds each header's first value (unfolded, not decoded: only presence is read
  // of it, `isForward`), under the names mailparser's map has.
  const headers = new Map<string, string>();
  const all = new Map<string, string[]>();
  for (const h of email.headerLines) {
    const { value } = libmime.decodeHeader(h.line);
    const name = mapName(h.key);
    if (!headers.has(name) && mailparserKeeps(h.key, value, decoded)) headers.set(name, value);
    const values = all.get(h.key);
    if (values) values.push(value);
    else all.set(h.key, [value]);
  }
  const mail: Record<string, unknown> = {
    headers,
    // mailparser's header lines join a folded header's lines with CRLF, whatever the message's line ends.
    headerLines: email.headerLines.map((h) => ({ key: h.key, line: h.line.replace(/\n/g, '\r\n') })),
    html: parts.html ? mailparserText(email.html ?? '', parts.html, endsWithLf) : false,
  };
  if (parts.plain) mail.text = mailparserText(email.text ?? '', parts.plain, endsWithLf);
  // An empty body (mailparser leaves out its text or HTML as it goes) or 8-bit ASCII: let it answer.
  if (mail.text === '' || mail.html === '' || mail.text === null || mail.html === null) return null;
  // As mailparser: a single-valued header is the first of its headers whose value is not empty
  // once decoded; a date that does not parse is the time of parsing.
  const subject = all
    .get('subject')
    ?.map(decoded)
    .find((v) => v !== '');
  if (subject !== undefined) mail.subject = subject;
  for (const [key, name] of [
    ['message-id', 'messageId'],
    ['in-reply-to', 'inReplyTo'],
  ] as const) {
    const id = all
      .get(key)
      ?.map((v) => messageIdForm(decoded(v)))
      .find((v) => v !== undefined);
    if (id !== undefined) mail[name] = id;
  }
  const date = all.get('date')?.[0];
  if (date !== undefined) {
    const at = new Date(date);
    mail.date = Number.isNaN(at.getTime()) ? new Date() : at;
  }
  const references = all.get('references');
  if (references) {
    const refs = references.flatMap((v) =>
      decoded(v)
        .split(/\s+/)
        .flatMap((r) => messageIdForm(r) ?? []),
    );
    mail.references = refs.length === 1 ? refs[0] : refs;
  }
  for (const key of ['from', 'to', 'cc', 'bcc', 'reply-to'] as const) {
    const values = all.get(key);
    if (!values) continue;
    // From and Reply-To are single-valued in mailparser, To, Cc and Bcc one object per header.
    const single = key === 'from' || key === 'reply-to';
    const objects = (single ? values.slice(0, 1) : values).map((v) => parseAddressHeader(v));
    mail[key === 'reply-to' ? 'replyTo' : key] = objects.length === 1 ? objects[0] : objects;
  }
  mail.attachments = email.attachments.map((a) => {
    const content = Buffer.from(a.content as ArrayBuffer);
    const contentType =
      a.mimeType === 'application/octet-stream' && a.filename
        ? libmime.detectMimeType(a.filename) || a.mimeType
        : a.mimeType;
    return {
      type: 'attachment',
      content,
      contentType,
      ...(a.disposition ? { contentDisposition: a.disposition } : {}),
      filename: a.filename ?? undefined,
      ...(a.contentId
        ? { contentId: a.contentId, cid: a.contentId.trim().replace(/^<|>$/g, '').trim() }
        : {}),
      ...(a.related ? { related: true } : {}),
      headers: new Map(),
      headerLines: [],
      checksum: createHash('md5').update(content).digest('hex'),
      size: content.length,
    };
  });
  return mail as unknown as ParsedMail;
}
