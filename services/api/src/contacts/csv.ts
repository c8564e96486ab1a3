import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ContactStore, checkPropertyValue, type ImportedContact, type PropertyType } from '@tern/bulk';
import {
  audienceNameSchema,
  type ContactAttributes,
  CSV_AUDIENCE_SEPARATOR,
  contactAttributesSchema,
  contactEmailSchema,
  type ImportResult,
  MAX_AUDIENCES,
  MAX_NAME_LENGTH,
} from '@tern/contracts';
import { HttpError, httpError } from '@tern/http';
import { CsvError, parse } from 'csv-parse';
import { restoreCell } from './csv-export.js';

export { contactsCsv, neutraliseCell, restoreCell } from './csv-export.js';

/** Content types `POST /contacts/import` reads. */
export const CSV_CONTENT_TYPES = ['text/csv', 'application/csv'];
export const DEFAULT_IMPORT_MAX_BYTES = 64 * 1024 * 1024;
/** Rows per upsert statement: large enough to amortise the round trip, small enough to stay light. */
export const IMPORT_BATCH_ROWS = 1000;
/** Refused rows listed in the answer; the rest are only counted. */
export const MAX_REPORTED_ERRORS = 1000;
/** A single CSV field longer than this is refused (keeps one bad line from eating memory). */
const MAX_FIELD_BYTES = 64 * 1024;

type Field = 'email' | 'firstName' | 'lastName' | 'subscribed' | 'audiences' | 'attributes';
/** A column of a contact property (SPEC §27): the header is the property's name. */
type PropertyColumn = { property: string; type: PropertyType };
type Column = Field | PropertyColumn | null;

/** Header names (case-insensitive) → field; `null` = read and ignored (export-only columns). */
export const HEADER_FIELDS: Record<string, Field | null> = {
  email: 'email',
  first_name: 'firstName',
  firstname: 'firstName',
  last_name: 'lastName',
  lastname: 'lastName',
  subscribed: 'subscribed',
  audiences: 'audiences',
  attributes: 'attributes',
  id: null,
  created_at: null,
  createdat: null,
  updated_at: null,
  updatedat: null,
  unsubscribed_at: null,
  unsubscribedat: null,
};

const TRUE = new Set(['true', 'yes', '1']);
const FALSE = new Set(['false', 'no', '0']);

class RowError extends Error {}

/**
 * The columns of a header row: the fixed ones, and a defined property's name (exactly as defined);
 * a 400 for a missing `email`, an unknown or a repeated column.
 */
function readHeader(record: string[], properties: ReadonlyMap<string, PropertyType>): Column[] {
  const seen = new Set<string>();
  const fields = record.map((raw): Column => {
    const trimmed = raw.trim();
    const name = trimmed.toLowerCase();
    const type = properties.get(trimmed);
    if (!(name in HEADER_FIELDS) && type === undefined) {
      throw httpError(
        400,
        `body: unknown column "${raw.slice(0, 64)}" in the header row; known columns: email, first_name, last_name, subscribed, audiences, attributes, the contact properties (id, created_at, updated_at are ignored)`,
        { code: 'INVALID_CSV' },
      );
    }
    const field: Column =
      name in HEADER_FIELDS ? (HEADER_FIELDS[name] ?? null) : { property: trimmed, type: type! };
    const key = field === null ? name : typeof field === 'string' ? field : `property:${field.property}`;
    if (seen.has(key))
      throw httpError(400, `body: column "${raw.slice(0, 64)}" appears twice in the header row`, {
        code: 'INVALID_CSV',
      });
    seen.add(key);
    return field;
  });
  if (!fields.includes('email'))
    throw httpError(400, 'body: the header row has no email column', { code: 'INVALID_CSV' });
  return fields;
}

/** A property cell as its typed value (an empty cell was left out before). */
function propertyCell(column: PropertyColumn, cell: string): string | number | boolean {
  let value: unknown = cell;
  if (column.type === 'number')
    value = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(cell) ? Number(cell) : cell;
  else if (column.type === 'boolean') {
    const v = cell.toLowerCase();
    value = TRUE.has(v) ? true : FALSE.has(v) ? false : cell;
  }
  const checked = checkPropertyValue(column.type, column.property, value);
  if ('error' in checked || checked.value === null)
    throw new RowError('error' in checked ? checked.error : `property ${column.property} is empty`);
  return checked.value;
}

/** One data row → the contact it names; throws a `RowError` saying what is wrong. */
function readRow(fields: readonly Column[], record: readonly string[]): Omit<ImportedContact, 'id'> {
  if (record.length !== fields.length) {
    throw new RowError(`expected ${fields.length} columns, got ${record.length}`);
  }
  const cell = (field: Field): string | null => {
    const i = fields.indexOf(field);
    const value = i < 0 ? '' : restoreCell((record[i] ?? '').trim());
    return value === '' ? null : value;
  };
  const emailCell = cell('email');
  if (emailCell === null) throw new RowError('email is empty');
  const email = contactEmailSchema.safeParse(emailCell);
  if (!email.success) throw new RowError(email.error.issues[0]?.message ?? 'email is invalid');

  const name = (field: 'firstName' | 'lastName', label: string) => {
    const value = cell(field);
    if (value !== null && value.length > MAX_NAME_LENGTH) {
      throw new RowError(`${label} must be at most ${MAX_NAME_LENGTH} characters`);
    }
    return value;
  };

  const subscribedCell = cell('subscribed');
  let subscribed: boolean | null = null;
  if (subscribedCell !== null) {
    const v = subscribedCell.toLowerCase();
    if (TRUE.has(v)) subscribed = true;
    else if (FALSE.has(v)) subscribed = false;
    else throw new RowError('subscribed must be true, false, yes, no, 1 or 0');
  }

  const audiencesCell = cell('audiences');
  let audiences: string[] | null = null;
  if (audiencesCell !== null) {
    audiences = [];
    for (const part of audiencesCell.split(CSV_AUDIENCE_SEPARATOR)) {
      const audience = part.trim();
      if (audience === '' || audiences.includes(audience)) continue;
      const parsed = audienceNameSchema.safeParse(audience);
      if (!parsed.success)
        throw new RowError(`audiences: ${parsed.error.issues[0]?.message ?? 'invalid name'}`);
      audiences.push(audience);
    }
    if (audiences.length > MAX_AUDIENCES)
      throw new RowError(`audiences must have at most ${MAX_AUDIENCES} names`);
  }

  const attributesCell = cell('attributes');
  let attributes: ContactAttributes | null = null;
  if (attributesCell !== null) {
    let json: unknown;
    try {
      json = JSON.parse(attributesCell);
    } catch {
      throw new RowError('attributes must be a JSON object');
    }
    const parsed = contactAttributesSchema.safeParse(json);
    if (!parsed.success) throw new RowError(parsed.error.issues[0]?.message ?? 'attributes are invalid');
    attributes = parsed.data;
  }

  let properties: Record<string, string | number | boolean> | null = null;
  for (const [i, column] of fields.entries()) {
    if (column === null || typeof column === 'string') continue;
    const value = restoreCell((record[i] ?? '').trim());
    if (value === '') continue;
    properties ??= {};
    properties[column.property] = propertyCell(column, value);
  }

  return {
    email: email.data,
    properties,
    firstName: name('firstName', 'first_name'),
    lastName: name('lastName', 'last_name'),
    subscribed,
    audiences,
    attributes,
  };
}

/**
 * Reads and drops what is left of a request body after the import stopped, so the answer goes out
 * on an intact connection; past `maxBytes` more, the connection is cut instead.
 */
function discardRest(body: Readable, maxBytes: number): void {
  if (body.readableEnded || body.destroyed) return;
  let dropped = 0;
  body.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > maxBytes) body.destroy();
  });
  body.on('error', () => undefined);
  body.resume();
}

/** Passes bytes through and stops the import with a 413 past `maxBytes`. */
function byteLimit(maxBytes: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      seen += chunk.length;
      if (seen > maxBytes) {
        callback(
          httpError(413, `The CSV body is larger than ${maxBytes} bytes`, { code: 'PAYLOAD_TOO_LARGE' }),
        );
        return;
      }
      callback(null, chunk);
    },
  });
}

export interface ImportContactsOptions {
  /** Where each batch is upserted. */
  contacts: Pick<ContactStore, 'upsert'>;
  tenantId: string;
  body: Readable;
  addAudience: string | null;
  /** The tenant's contact properties: their columns are read and checked (SPEC §27). */
  properties: ReadonlyMap<string, PropertyType>;
  maxBytes: number;
  now: () => Date;
  newId: () => string;
}

/**
 * Streams a CSV body into contacts: records are parsed as the bytes arrive and upserted
 * `IMPORT_BATCH_ROWS` at a time; the parser waits while a batch is written (backpressure), so
 * memory holds one batch whatever the file's size. Rows written before a fatal error (413, a
 * dropped connection) stay written: every batch is an upsert, so sending the file again is safe.
 */
export async function importContacts(opts: ImportContactsOptions): Promise<ImportResult> {
  const result: ImportResult = { rows: 0, created: 0, updated: 0, failed: 0, errors: [] };
  const fail = (row: number, message: string) => {
    result.failed++;
    if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ row, message });
  };

  let batch: ImportedContact[] = [];
  let batchRows = new Map<string, number>(); // email → row, for duplicates and raced rows
  const flush = async () => {
    if (batch.length === 0) return;
    const written = await opts.contacts.upsert(opts.tenantId, batch, opts.addAudience, opts.now());
    result.created += written.created;
    result.updated += written.updated;
    for (const email of written.raced) {
      fail(batchRows.get(email) ?? 0, 'another request created this contact meanwhile; import the row again');
    }
    batch = [];
    batchRows = new Map();
  };

  // `row` is the line number in the file (the header is row 1; for a record spanning lines, its
  // last line), as the parser counts it: deterministic whatever the chunking of the body.
  let fields: Column[] | null = null;
  const unreadable: { row: number; message: string; beforeHeader: boolean }[] = [];
  let unreadableCount = 0;
  const parser = parse({
    bom: true,
    info: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    max_record_size: MAX_FIELD_BYTES,
    on_skip: (error) => {
      // A record the parser could not read (a stray quote…) is a refused row like any other. The
      // parser runs ahead of the consumer, so these are merged in row order at the end.
      unreadableCount++;
      if (unreadable.length < MAX_REPORTED_ERRORS) {
        const context = error as (CsvError & { lines?: number; records?: number }) | undefined;
        unreadable.push({
          row: context?.lines ?? 0,
          message: `unreadable CSV: ${error?.message ?? 'malformed record'}`,
          beforeHeader: (context?.records ?? 0) === 0,
        });
      }
    },
  });

  const consume = async (records: AsyncIterable<{ record: string[]; info: { lines: number } }>) => {
    for await (const { record, info } of records) {
      const row = info.lines;
      if (fields === null) {
        const broken = unreadable.find((u) => u.beforeHeader);
        if (broken)
          throw httpError(400, `body: the header row is ${broken.message}`, { code: 'INVALID_CSV' });
        fields = readHeader(record, opts.properties);
        continue;
      }
      result.rows++;
      let contact: Omit<ImportedContact, 'id'>;
      try {
        contact = readRow(fields, record);
      } catch (error) {
        if (error instanceof RowError) {
          fail(row, error.message);
          continue;
        }
        throw error;
      }
      // The same address twice in one statement cannot be upserted: write what came before first.
      if (batchRows.has(contact.email)) await flush();
      batch.push({ id: opts.newId(), ...contact });
      batchRows.set(contact.email, row);
      if (batch.length >= IMPORT_BATCH_ROWS) await flush();
    }
    await flush();
  };

  // The request is read through an iterator that leaves it open when the import stops early (a
  // bad header row, a refused batch): destroying it would cut the connection before the 400 is
  // written — the client saw a reset (AbortError) instead of the answer (issue 24, item 4).
  const source = Readable.from(opts.body.iterator({ destroyOnReturn: false }), { objectMode: false });
  // What stopped the import: the consumer's own error, not the AbortError the pipeline then
  // raises while tearing the other streams down.
  let stoppedBy: unknown;
  const consumeOrRemember = async (records: AsyncIterable<{ record: string[]; info: { lines: number } }>) => {
    try {
      await consume(records);
    } catch (error) {
      stoppedBy = error;
      throw error;
    }
  };
  try {
    await pipeline(source, byteLimit(opts.maxBytes), parser, consumeOrRemember);
  } catch (caught) {
    const error = stoppedBy ?? caught;
    const tooLarge = error instanceof HttpError && error.statusCode === 413;
    if (tooLarge) opts.body.destroy();
    else discardRest(opts.body, opts.maxBytes);
    if (error instanceof CsvError)
      throw httpError(400, `body: unreadable CSV: ${error.message}`, { code: 'INVALID_CSV' });
    throw error;
  }
  if (fields === null && unreadableCount > 0) {
    throw httpError(400, `body: the header row is ${unreadable[0]?.message ?? 'unreadable CSV'}`, {
      code: 'INVALID_CSV',
    });
  }
  if (unreadableCount > 0) {
    result.rows += unreadableCount;
    result.failed += unreadableCount;
    result.errors = [...result.errors, ...unreadable.map(({ row, message }) => ({ row, message }))]
      .sort((a, b) => a.row - b.row)
      .slice(0, MAX_REPORTED_ERRORS);
  }
  if (fields === null)
    throw httpError(400, 'body: the CSV is empty; expected a header row with an email column', {
      code: 'INVALID_CSV',
    });
  return result;
}
