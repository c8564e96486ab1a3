/**
 * `parseSimple` against mailparser's streams (`parseStreamed`) over a corpus of messages on disk
 * (issue 43; docs/inbound.md, "Two parsers, one answer"): every file of the given directories,
 * as it is and with its line ends made CRLF (as SMTP delivers them); each message postal-mime
 * takes must be answered as mailparser answers it, field by field, as `parse-simple.unit.test.ts`
 * compares them. Prints each difference and the counts; exits 1 on a difference.
 *   npx tsx bench/experiments/parse-corpus.ts <directory> [<directory> …]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseSimple, parseStreamed } from '@tern/inbound';
import type { ParsedMail } from 'mailparser';

function view(mail: ParsedMail) {
  const addresses = (a: ParsedMail['to']) =>
    a === undefined ? undefined : (Array.isArray(a) ? a : [a]).map((o) => o.value);
  return JSON.parse(
    JSON.stringify({
      subject: mail.subject,
      // A date that does not parse is the time of parsing in both: compare whether it parsed.
      date: mail.date && Math.abs(mail.date.getTime() - Date.now()) < 60_000 ? 'now' : mail.date,
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
      })),
    }),
  ) as Record<string, unknown>;
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) throw new Error('usage: parse-corpus.ts <directory> [<directory> …]');
const counts = { files: 0, parsed: 0, declined: 0, differ: 0 };
for (const dir of dirs)
  for (const file of readdirSync(dir)) {
    counts.files++;
    const asIs = readFileSync(join(dir, file));
    const crlf = Buffer.from(asIs.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
    for (const [form, raw] of [
      ['as is', asIs],
      ['CRLF', crlf],
    ] as const) {
      const message = { chunks: [raw], size: raw.length };
      const simple = await parseSimple(message);
      if (!simple) {
        counts.declined++;
        continue;
      }
      counts.parsed++;
      const got = view(simple);
      const want = view(await parseStreamed(message));
      if (isDeepStrictEqual(got, want)) continue;
      counts.differ++;
      for (const key of Object.keys(want).filter((k) => !isDeepStrictEqual(got[k], want[k])))
        console.log(
          `${file} (${form}) ${key}:\n  postal-mime ${JSON.stringify(got[key])}\n  mailparser  ${JSON.stringify(want[key])}`,
        );
    }
  }
console.log(counts);
process.exitCode = counts.differ > 0 ? 1 : 0;
