import type pg from 'pg';

/**
 * Contact properties (SPEC §27): typed definitions per tenant (`contact_properties`) and the
 * check of the values a contact write carries (`contacts.properties`).
 */

type Queryable = Pick<pg.Pool, 'query'>;

export const PROPERTY_TYPES = ['string', 'number', 'boolean', 'date'] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];
/** Definitions a tenant may have. */
export const MAX_PROPERTIES = 100;
export const MAX_PROPERTY_STRING_LENGTH = 1000;

export interface ContactProperty {
  name: string;
  type: PropertyType;
  createdAt: string;
}

/** A value as stored: a date is an ISO 8601 instant in UTC (`…Z`). */
export type PropertyValue = string | number | boolean;
export type PropertyValues = Record<string, PropertyValue>;

interface Row {
  name: string;
  type: PropertyType;
  created_at: Date;
}
const toProperty = (r: Row): ContactProperty => ({
  name: r.name,
  type: r.type,
  createdAt: r.created_at.toISOString(),
});

/** Adds a definition; `'exists'` for a name the tenant has, `'full'` past {@link MAX_PROPERTIES}. */
export async function insertProperty(
  db: Queryable,
  tenantId: string,
  p: { name: string; type: PropertyType },
  at: Date,
): Promise<ContactProperty | 'exists' | 'full'> {
  const { rows } = await db.query<Row>(
    `INSERT INTO contact_properties (tenant_id, name, type, created_at)
     SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM contact_properties WHERE tenant_id = $1) < $5
     ON CONFLICT (tenant_id, name) DO NOTHING
     RETURNING name, type, created_at`,
    [tenantId, p.name, p.type, at, MAX_PROPERTIES],
  );
  if (rows[0]) return toProperty(rows[0]);
  const { rowCount } = await db.query('SELECT 1 FROM contact_properties WHERE tenant_id = $1 AND name = $2', [
    tenantId,
    p.name,
  ]);
  return (rowCount ?? 0) > 0 ? 'exists' : 'full';
}

export async function listProperties(db: Queryable, tenantId: string): Promise<ContactProperty[]> {
  const { rows } = await db.query<Row>(
    'SELECT name, type, created_at FROM contact_properties WHERE tenant_id = $1 ORDER BY name COLLATE "C"',
    [tenantId],
  );
  return rows.map(toProperty);
}

/** Deletes a definition and every contact's value of it. */
export async function deleteProperty(db: Queryable, tenantId: string, name: string): Promise<boolean> {
  const { rows } = await db.query<{ deleted: boolean }>(
    `WITH d AS (DELETE FROM contact_properties WHERE tenant_id = $1 AND name = $2 RETURNING name),
          u AS (UPDATE contacts SET properties = properties - $2
                 WHERE tenant_id = $1 AND properties ? $2 AND EXISTS (SELECT 1 FROM d))
     SELECT EXISTS (SELECT 1 FROM d) AS deleted`,
    [tenantId, name],
  );
  return rows[0]?.deleted === true;
}

/** The tenant's definitions by name. */
export async function propertyTypes(db: Queryable, tenantId: string): Promise<Map<string, PropertyType>> {
  return new Map((await listProperties(db, tenantId)).map((p) => [p.name, p.type]));
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** A date property's value as stored (`…Z`), or null when it is no ISO 8601 date. */
export function normaliseDate(value: string): string | null {
  if (!ISO_DATE.test(value)) return null;
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/**
 * One value checked against its definition: the stored form, or why not. `null` (a write that
 * clears the value) passes as is.
 */
export function checkPropertyValue(
  type: PropertyType | undefined,
  name: string,
  value: unknown,
): { value: PropertyValue | null } | { error: string } {
  if (type === undefined) return { error: `property ${name} is not defined (POST /contact-properties)` };
  if (value === null) return { value: null };
  switch (type) {
    case 'string':
      if (typeof value !== 'string') return { error: `property ${name} must be a string` };
      if (value.length > MAX_PROPERTY_STRING_LENGTH)
        return { error: `property ${name} must be at most ${MAX_PROPERTY_STRING_LENGTH} characters` };
      return { value };
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
        ? { value }
        : { error: `property ${name} must be a number` };
    case 'boolean':
      return typeof value === 'boolean' ? { value } : { error: `property ${name} must be a boolean` };
    case 'date': {
      const date = typeof value === 'string' ? normaliseDate(value) : null;
      return date === null ? { error: `property ${name} must be an ISO 8601 date` } : { value: date };
    }
  }
}

/**
 * A write's values checked against the definitions: the stored forms (null = clear), or the
 * first error (the 400's message).
 */
export function checkPropertyValues(
  types: ReadonlyMap<string, PropertyType>,
  values: Readonly<Record<string, unknown>>,
): { values: Record<string, PropertyValue | null> } | { error: string } {
  const out: Record<string, PropertyValue | null> = {};
  for (const [name, raw] of Object.entries(values)) {
    const checked = checkPropertyValue(types.get(name), name, raw);
    if ('error' in checked) return checked;
    out[name] = checked.value;
  }
  return { values: out };
}
