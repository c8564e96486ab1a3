import type { ParsedMail } from 'mailparser';

/**
 * What an arrival reads of a parse (receive.ts, forward.ts, dmarc.ts), as plain JSON values: the
 * fields `parseSimple` must answer as mailparser does (`parse-simple.unit.test.ts` and
 * `bench/experiments/parse-corpus.ts` compare them). Dates as ISO strings, bytes as base64.
 */
export function parsedFields(mail: ParsedMail): Record<string, unknown> {
  const addresses = (a: ParsedMail['to']) =>
    a === undefined ? undefined : (Array.isArray(a) ? a : [a]).map((o) => o.value);
  return JSON.parse(
    JSON.stringify({
      subject: mail.subject,
      date: mail.date,
      messageId: mail.messageId,
      inReplyTo: mail.inReplyTo,
      references: mail.references,
      text: mail.text,
      html: mail.html,
      from: addresses(mail.from),
      to: addresses(mail.to),
      cc: addresses(mail.cc),
      bcc: addresses(mail.bcc),
      replyTo: addresses(mail.replyTo),
      headerLines: mail.headerLines,
      headerKeys: [...new Set(mail.headers.keys())].sort(),
      attachments: mail.attachments.map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        size: a.size,
        checksum: a.checksum,
        contentId: a.contentId,
        cid: a.cid,
        related: a.related,
        contentDisposition: a.contentDisposition,
        content: a.content.toString('base64'),
      })),
    }),
  ) as Record<string, unknown>;
}
