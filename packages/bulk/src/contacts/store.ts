import type { Contact, ContactAttributes } from '@tern/contracts';
import { deleteTenantRow, type PageWindow, tenantRecords } from '@tern/kernel';
import { suppressedSql } from '@tern/read-models';
import type pg from 'pg';

/**
 * Contacts in Postgres (SPEC §14): plain functions of a pool and the tenant id, no HTTP. Every
 * query is scoped by `tenant_id`, so another tenant's id is simply not found.
 */

export type Queryable = Pick<pg.Pool, 'query'>;

export interface ContactRow {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  attributes: ContactAttributes;
  subscribed: boolean;
  unsubscribed_at: Date | null;
  audiences: string[];
  properties: Record<string, string | number | boolean>;
  topics: Record<string, 'opt_in' | 'opt_out'>;
  created_at: Date;
  updated_at: Date;
}

export const COLUMNS =
  'id, email, first_name, last_name, attributes, subscribed, unsubscribed_at, audiences, properties, topics, created_at, updated_at';

export function toContact(r: ContactRow): Contact {
  return {
    id: r.id,
    email: r.email,
    firstName: r.first_name,
    lastName: r.last_name,
    attributes: r.attributes,
    subscribed: r.subscribed,
    unsubscribedAt: r.unsubscribed_at === null ? null : r.unsubscribed_at.toISOString(),
    audiences: r.audiences,
    properties: r.properties,
    topics: r.topics,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

const CONTACTS = tenantRecords({ table: 'contacts', columns: COLUMNS, map: toContact });

const isUniqueViolation = (error: unknown) => (error as { code?: string } | null)?.code === '23505';

export interface NewContact {
  id: string;
  email: string;
  firstName?: string | null | undefined;
  lastName?: string | null | undefined;
  attributes?: ContactAttributes | undefined;
  subscribed?: boolean | undefined;
  audiences?: string[] | undefined;
  /** Checked values (`checkPropertyValues`); null entries are dropped. */
  properties?: Record<string, string | number | boolean | null> | undefined;
  /** Topic choices; null entries are dropped. */
  topics?: Record<string, 'opt_in' | 'opt_out' | null> | undefined;
}

/** Inserts a contact; `'exists'` when the tenant already has one with that address. */
export async function insertContact(
  db: Queryable,
  tenantId: string,
  c: NewContact,
  now: Date,
): Promise<Contact | 'exists'> {
  const subscribed = c.subscribed ?? true;
  try {
    const { rows } = await db.query<ContactRow>(
      `INSERT INTO contacts (tenant_id, id, email, first_name, last_name, attributes, subscribed,
                             unsubscribed_at, audiences, created_at, updated_at, properties, topics)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, jsonb_strip_nulls($11::jsonb), jsonb_strip_nulls($12::jsonb))
       RETURNING ${COLUMNS}`,
      [
        tenantId,
        c.id,
        c.email,
        c.firstName ?? null,
        c.lastName ?? null,
        JSON.stringify(c.attributes ?? {}),
        subscribed,
        subscribed ? null : now,
        c.audiences ?? [],
        now,
        JSON.stringify(c.properties ?? {}),
        JSON.stringify(c.topics ?? {}),
      ],
    );
    return toContact(rows[0]!);
  } catch (error) {
    if (isUniqueViolation(error)) return 'exists';
    throw error;
  }
}

export function getContact(db: Queryable, tenantId: string, id: string): Promise<Contact | null> {
  return CONTACTS.get(db, tenantId, id);
}

/** One page, newest first (`created_at DESC, id DESC`); `audience` narrows to its members. */
export async function listContacts(
  db: Queryable,
  tenantId: string,
  q: { audience?: string | undefined; email?: string | undefined; limit: number; offset: string },
): Promise<{ data: Contact[]; total: number }> {
  const audience = q.audience ?? null;
  const email = q.email?.toLowerCase() ?? null;
  const where =
    'tenant_id = $1 AND ($2::text IS NULL OR audiences @> ARRAY[$2::text]) AND ($3::text IS NULL OR email = $3::text)';
  const [page, count] = await Promise.all([
    db.query<ContactRow>(
      `SELECT ${COLUMNS} FROM contacts WHERE ${where}
       ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4 OFFSET $5`,
      [tenantId, audience, email, q.limit, q.offset],
    ),
    db.query<{ total: string }>(`SELECT count(*) AS total FROM contacts WHERE ${where}`, [
      tenantId,
      audience,
      email,
    ]),
  ]);
  return { data: page.rows.map(toContact), total: Number(count.rows[0]?.total ?? 0) };
}

export type ContactPatch = Omit<Partial<NewContact>, 'id'>;

/**
 * Applies the given fields (absent = unchanged; `attributes` and `audiences` replace, `properties`
 * and `topics` merge: a null entry removes its key). `null` when
 * the contact is not the tenant's, `'exists'` when the new address belongs to another contact.
 */
export async function updateContact(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: ContactPatch,
  now: Date,
): Promise<Contact | null | 'exists'> {
  const has = (k: keyof ContactPatch) => patch[k] !== undefined;
  try {
    const { rows } = await db.query<ContactRow>(
      `UPDATE contacts SET
         email       = CASE WHEN $3 THEN $4 ELSE email END,
         first_name  = CASE WHEN $5 THEN $6 ELSE first_name END,
         last_name   = CASE WHEN $7 THEN $8 ELSE last_name END,
         attributes  = CASE WHEN $9 THEN $10::jsonb ELSE attributes END,
         audiences   = CASE WHEN $11 THEN $12::text[] ELSE audiences END,
         unsubscribed_at = CASE WHEN NOT $13 THEN unsubscribed_at
                                WHEN $14 THEN NULL
                                WHEN subscribed THEN $15
                                ELSE unsubscribed_at END,
         subscribed  = CASE WHEN $13 THEN $14 ELSE subscribed END,
         properties  = jsonb_strip_nulls(properties || $16::jsonb),
         topics      = jsonb_strip_nulls(topics || $17::jsonb),
         updated_at  = $15
       WHERE tenant_id = $1 AND id = $2
       RETURNING ${COLUMNS}`,
      [
        tenantId,
        id,
        has('email'),
        patch.email ?? null,
        has('firstName'),
        patch.firstName ?? null,
        has('lastName'),
        patch.lastName ?? null,
        has('attributes'),
        JSON.stringify(patch.attributes ?? {}),
        has('audiences'),
        patch.audiences ?? [],
        has('subscribed'),
        patch.subscribed ?? true,
        now,
        JSON.stringify(patch.properties ?? {}),
        JSON.stringify(patch.topics ?? {}),
      ],
    );
    return rows[0] ? toContact(rows[0]) : null;
  } catch (error) {
    if (isUniqueViolation(error)) return 'exists';
    throw error;
  }
}

export function deleteContact(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  return deleteTenantRow(db, 'contacts', tenantId, id);
}

/** Erasure (SPEC §14): deletes the tenant's contact with this address; resolves with the ids that went. */
export async function deleteContactsTo(db: Queryable, tenantId: string, address: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'DELETE FROM contacts WHERE tenant_id = $1 AND email = $2 RETURNING id',
    [tenantId, address],
  );
  return rows.map((r) => r.id);
}

/** The recipient fields a template may use: `{{email}}`, `{{firstName}}`, `{{lastName}}`, attributes. */
export interface Recipient {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  attributes: Record<string, unknown>;
}

/**
 * A contact a campaign reaches (SPEC §15): subscribed and not on the tenant's suppression list.
 * One predicate for the fan-out and for the audience counts, so the count the dashboard shows
 * before a send is the fan-out's own.
 */
export const reachableContactSql = (alias: string) =>
  `(${alias}.subscribed AND NOT ${suppressedSql(`${alias}.tenant_id`, `${alias}.email`)})`;

export interface AudienceCounts {
  name: string;
  contacts: number;
  subscribed: number;
  reachable: number;
}

/** The audiences by name with their counts; `name` narrows to that one audience (its GIN index). */
export async function listAudiences(
  db: Queryable,
  tenantId: string,
  q: PageWindow & { name?: string | undefined },
): Promise<{ data: AudienceCounts[]; total: number }> {
  const name = q.name ?? null;
  const { rows } = await db.query<{
    name: string;
    contacts: string;
    subscribed: string;
    reachable: string;
    total: string;
  }>(
    `SELECT name, count(*) AS contacts, count(*) FILTER (WHERE c.subscribed) AS subscribed,
            count(*) FILTER (WHERE ${reachableContactSql('c')}) AS reachable,
            count(*) OVER () AS total
       FROM contacts c, unnest(c.audiences) AS name
      WHERE c.tenant_id = $1
        AND ($4::text IS NULL OR (c.audiences @> ARRAY[$4::text] AND name = $4::text))
      GROUP BY name
      ORDER BY name COLLATE "C"
      LIMIT $2 OFFSET $3`,
    [tenantId, q.limit, q.offset, name],
  );
  let total = Number(rows[0]?.total ?? 0);
  if (rows.length === 0 && q.offset !== '0') {
    const count = await db.query<{ total: string }>(
      `SELECT count(DISTINCT name) AS total FROM contacts c, unnest(c.audiences) AS name
        WHERE c.tenant_id = $1 AND ($2::text IS NULL OR (c.audiences @> ARRAY[$2::text] AND name = $2::text))`,
      [tenantId, name],
    );
    total = Number(count.rows[0]?.total ?? 0);
  }
  return {
    data: rows.map((r) => ({
      name: r.name,
      contacts: Number(r.contacts),
      subscribed: Number(r.subscribed),
      reachable: Number(r.reachable),
    })),
    total,
  };
}
