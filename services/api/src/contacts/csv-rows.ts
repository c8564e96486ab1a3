import { checkPropertyValue, type ImportedContact, type PropertyType } from '@tern/bulk';
import {
  audienceNameSchema,
  type ContactAttributes,
  CSV_AUDIENCE_SEPARATOR,
  contactAttributesSchema,
  contactEmailSchema,
  MAX_AUDIENCES,
  MAX_NAME_LENGTH,
} from '@tern/contracts';
import { httpError } from '@tern/http';
import { restoreCell } from './csv-export.js';

/**
 * The rows of `POST /contacts/import` (SPEC §12, §27): a header row → its columns, a data row →
 * the contact it names, or a `RowError` saying what is wrong with it.
 */

type Field = 'email' | 'firstName' | 'lastName' | 'subscribed' | 'audiences' | 'attributes';
/** A column of a contact property (SPEC §27): the header is the property's name. */
type PropertyColumn = { property: string; type: PropertyType };
export type Column = Field | PropertyColumn | null;

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

export class RowError extends Error {}

/**
 * The columns of a header row: the fixed ones, and a defined property's name (exactly as defined);
 * a 400 for a missing `email`, an unknown or a repeated column.
 */
export function readHeader(record: string[], properties: ReadonlyMap<string, PropertyType>): Column[] {
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
export function readRow(fields: readonly Column[], record: readonly string[]): Omit<ImportedContact, 'id'> {
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
