// The contacts export as CSV, and the formula-cell guard the import undoes (re-exported by csv.ts).
import { CONTACT_CSV_COLUMNS, type Contact, CSV_AUDIENCE_SEPARATOR } from '@tern/contracts';
import { stringify } from 'csv-stringify/sync';

/**
 * CSV injection (OWASP): a cell a spreadsheet would run as a formula starts with `=`, `+`, `-`, `@`,
 * TAB or CR. The export prefixes such a cell — and one that already starts with quotes before
 * such a character — with a single quote, which spreadsheets show as text; the import removes
 * exactly that one quote again, so an export still imports back unchanged (issue 24, item 8).
 */
const FORMULA_CELL = /^'*[=+\-@\t\r]/;
const NEUTRALISED_CELL = /^'+[=+\-@\t\r]/;

/** The export's form of a cell: never read as a formula. */
export const neutraliseCell = (value: string): string => (FORMULA_CELL.test(value) ? `'${value}` : value);

/** The import's reading of a cell the export neutralised. */
export const restoreCell = (value: string): string => (NEUTRALISED_CELL.test(value) ? value.slice(1) : value);

/** A contact as an export row (the columns of `CONTACT_CSV_COLUMNS`), formula cells neutralised. */
function csvRow(c: Contact, properties: readonly string[]): string[] {
  return rawCsvRow(c, properties).map(neutraliseCell);
}

function rawCsvRow(c: Contact, properties: readonly string[]): string[] {
  return [
    c.id,
    c.email,
    c.firstName ?? '',
    c.lastName ?? '',
    String(c.subscribed),
    c.audiences.join(CSV_AUDIENCE_SEPARATOR),
    Object.keys(c.attributes).length === 0 ? '' : JSON.stringify(c.attributes),
    c.createdAt,
    c.updatedAt,
    ...properties.map((name) => {
      const value = c.properties[name];
      return value === undefined ? '' : String(value);
    }),
  ];
}

/**
 * The export as CSV text chunks: the header, then one chunk per batch of contacts. Each contact
 * property (SPEC §27) is one more column, named as the property, after the fixed ones.
 */
export async function* contactsCsv(
  batches: AsyncIterable<Contact[]>,
  properties: readonly string[] = [],
): AsyncGenerator<string> {
  yield stringify([[...CONTACT_CSV_COLUMNS, ...properties]]);
  for await (const contacts of batches) yield stringify(contacts.map((c) => csvRow(c, properties)));
}
