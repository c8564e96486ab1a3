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
import { parsedFields, parseSimple, parseStreamed } from '@tern/inbound';
import type { ParsedMail } from 'mailparser';

/** Both parsers' fields; a date that does not parse is the time of parsing in both, so only that is compared. */
function view(mail: ParsedMail): Record<string, unknown> {
  const fields = parsedFields(mail);
  const unparsed = mail.date !== undefined && Math.abs(mail.date.getTime() - Date.now()) < 60_000;
  return unparsed ? { ...fields, date: 'now' } : fields;
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
