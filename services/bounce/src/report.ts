import { onFirstUse, requireOnFirstUse, withTimeout } from '@tern/kernel';
import type { ParsedMail } from 'mailparser';

// Loaded with the first report, not with the process (issue 45, item 6).
const loadMailparser = onFirstUse(() => import('mailparser'));
const libmime = requireOnFirstUse<typeof import('libmime')['default']>(import.meta.url, 'libmime');

/**
 * What a message to the bounce mailbox reports (SPEC §21), read from its MIME (mailparser) and
 * its machine-readable part's fields (libmime's header parser; the field semantics of RFC 3464
 * and RFC 5965 are written here, as no maintained npm package parses them):
 * - a DSN (`multipart/report; report-type=delivery-status`, RFC 3464; RFC 6533's
 *   `message/global-delivery-status` too): one entry per recipient with its action and status;
 * - an ARF complaint (`message/feedback-report`, RFC 5965): the feedback type and the original
 *   envelope sender;
 * - anything else: nothing (an auto-reply, a human's answer, garbage).
 */
export type DsnAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

export interface DsnRecipient {
  /** Final-Recipient's address (lower case), or Original-Recipient's when that is all there is. */
  recipient: string | null;
  originalRecipient: string | null;
  action: DsnAction;
  /** The enhanced status code (RFC 3463), e.g. `5.1.1`, or null when the field is missing or malformed. */
  status: string | null;
  /** Diagnostic-Code without its type (`smtp; 550 …` → `550 …`), or null. */
  diagnostic: string | null;
}

export type Report =
  | { kind: 'dsn'; envelopeId: string | null; recipients: DsnRecipient[] }
  | {
      kind: 'arf';
      feedbackType: string;
      /** Original-Mail-From: the envelope sender of the reported message (Tern's VERP). */
      originalMailFrom: string | null;
      originalRcptTo: string | null;
    }
  | { kind: 'other' };

/** Limits that keep a hostile message from costing much: fields and recipients read at most. */
const MAX_RECIPIENTS = 100;
const MAX_FIELD = 2000;

const ACTIONS = new Set<DsnAction>(['failed', 'delayed', 'delivered', 'relayed', 'expanded']);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const STATUS = /^([245])\.(\d{1,3})\.(\d{1,3})\b/;

/** The MIME of a raw message; never throws for bad input (mailparser is lenient), only for I/O. */
export async function parseMime(raw: Buffer): Promise<ParsedMail> {
  const { simpleParser } = await loadMailparser();
  return simpleParser(raw, {
    // A DSN's machine part as an attachment of its own, not merged into the text.
    keepDeliveryStatus: true,
    skipHtmlToText: true,
    skipTextLinks: true,
    skipImageLinks: true,
    skipTextToHtml: true,
    maxHtmlLengthToParse: 100_000,
  });
}

/** The field groups of a `message/delivery-status` body: groups are separated by blank lines. */
function fieldGroups(body: string): Record<string, string[]>[] {
  return body
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((group) => group.trim())
    .filter((group) => group.length > 0)
    .slice(0, MAX_RECIPIENTS + 1)
    .map((group) => libmime().decodeHeaders(`${group}\n`) as Record<string, string[]>);
}

/**
 * A field's first value, at most MAX_FIELD characters, without what no store can hold: U+0000
 * removed, a lone surrogate replaced (issue 40, item 11: a NUL in Diagnostic-Code made the event
 * unstorable, the report was answered 451 and retried for days).
 */
const first = (fields: Record<string, string[]>, name: string): string | null => {
  const value = fields[name]?.[0]?.replaceAll('\u0000', '').trim();
  return value ? value.slice(0, MAX_FIELD).replace(LONE_SURROGATE, '\uFFFD') : null;
};

/** `rfc822; Ada@Example.com` → `ada@example.com` (other address types: the value as it is). */
export function addressOf(typed: string | null, lowerCase = true): string | null {
  if (typed === null) return null;
  const semi = typed.indexOf(';');
  const value = (semi >= 0 ? typed.slice(semi + 1) : typed).trim().replace(/^<|>$/g, '');
  if (value.length === 0 || value.length > 320) return null;
  return lowerCase ? value.toLowerCase() : value;
}

/** `smtp; 550 5.1.1 …` → `550 5.1.1 …`. */
function diagnosticOf(typed: string | null): string | null {
  if (typed === null) return null;
  const semi = typed.indexOf(';');
  const value = (semi >= 0 && semi < 20 ? typed.slice(semi + 1) : typed).replace(/\s+/g, ' ').trim();
  return value.length > 0 ? value : null;
}

function statusOf(value: string | null): string | null {
  const m = value ? STATUS.exec(value) : null;
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}

/** The per-recipient entries of a delivery-status body (RFC 3464 §2.2, §2.3). */
export function parseDeliveryStatus(body: string): { envelopeId: string | null; recipients: DsnRecipient[] } {
  const [messageFields, ...recipientGroups] = fieldGroups(body);
  const recipients: DsnRecipient[] = [];
  for (const fields of recipientGroups) {
    const action = first(fields, 'action')?.toLowerCase().split(/[\s(]/)[0];
    if (!action || !ACTIONS.has(action as DsnAction)) continue;
    const finalRecipient = addressOf(first(fields, 'final-recipient'));
    const originalRecipient = addressOf(first(fields, 'original-recipient'));
    recipients.push({
      recipient: finalRecipient ?? originalRecipient,
      originalRecipient,
      action: action as DsnAction,
      status: statusOf(first(fields, 'status')),
      diagnostic: diagnosticOf(first(fields, 'diagnostic-code')),
    });
    if (recipients.length >= MAX_RECIPIENTS) break;
  }
  return { envelopeId: messageFields ? first(messageFields, 'original-envelope-id') : null, recipients };
}

/** The fields of a `message/feedback-report` body (RFC 5965 §3.1). */
export function parseFeedbackReport(body: string): Extract<Report, { kind: 'arf' }> | null {
  const [fields] = fieldGroups(body);
  if (!fields) return null;
  const feedbackType = first(fields, 'feedback-type')?.toLowerCase().split(/[\s;]/)[0];
  if (!feedbackType || !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(feedbackType)) return null;
  return {
    kind: 'arf',
    feedbackType,
    // Case kept: it is Tern's VERP address (the lookup folds case itself).
    originalMailFrom: addressOf(first(fields, 'original-mail-from'), false),
    originalRcptTo: addressOf(first(fields, 'original-rcpt-to')),
  };
}

const DSN_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);

/** What a parsed message reports. */
export function reportOf(mail: ParsedMail): Report {
  for (const part of mail.attachments) {
    const type = part.contentType.toLowerCase();
    if (DSN_TYPES.has(type)) {
      const { envelopeId, recipients } = parseDeliveryStatus(part.content.toString('utf8'));
      if (recipients.length > 0) return { kind: 'dsn', envelopeId, recipients };
    }
    if (type === 'message/feedback-report') {
      const arf = parseFeedbackReport(part.content.toString('utf8'));
      if (arf) return arf;
    }
  }
  return { kind: 'other' };
}

/** A report read from raw bytes, and the message's Message-ID (the report's own id, when it has one). */
export interface ReadReport {
  report: Report;
  messageId: string | null;
}

/**
 * Reads a message: what it reports, or `other` when mailparser refuses it (its own limits: too
 * many parts, too deep) or it takes longer than `timeoutMs`. Never throws: a message nobody can
 * read is dropped, not retried.
 */
export async function readReport(raw: Buffer, timeoutMs = 10_000): Promise<ReadReport> {
  try {
    const mail = await withTimeout(parseMime(raw), timeoutMs);
    return { report: reportOf(mail), messageId: mail.messageId?.slice(0, 998) ?? null };
  } catch {
    // Refused by mailparser, or not read within `timeoutMs`.
    return { report: { kind: 'other' }, messageId: null };
  }
}
