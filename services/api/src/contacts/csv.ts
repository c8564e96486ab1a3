import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ContactStore, ImportedContact, PropertyType } from '@tern/bulk';
import type { ImportResult } from '@tern/contracts';
import { HttpError, httpError } from '@tern/http';
import { CsvError, parse } from 'csv-parse';
import { type Column, RowError, readHeader, readRow } from './csv-rows.js';

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
