import type { Contact, ContactAttributes } from '@tern/contracts';
import { COLUMNS, type ContactRow, type Queryable, toContact } from './store.js';

/** CSV import and export of contacts (SPEC §14): batches in one statement, pages in id order. */

/** One row of an import: `undefined`/`null` fields leave an existing contact's value as it is. */
export interface ImportedContact {
  id: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  attributes: ContactAttributes | null;
  subscribed: boolean | null;
  audiences: string[] | null;
  /** Checked values of contact properties (SPEC §27), merged into the stored ones; null: none. */
  properties?: Record<string, string | number | boolean> | null;
}

/**
 * Upserts a batch on `(tenant_id, email)` (addresses unique within the batch). A non-null field
 * replaces the stored one, a null one leaves it; `subscribed: true` never resubscribes an existing
 * contact that unsubscribed (only an explicit PATCH does); `addAudience` joins every row to it.
 * `raced`: addresses another request created between this statement's update and insert (rare);
 * they are not written and the caller reports them. `createdIds`/`updatedIds`: the contacts written
 * (the repository puts their `contact.created`/`contact.updated` in the automations' inbox).
 */
export async function upsertContacts(
  db: Queryable,
  tenantId: string,
  batch: readonly ImportedContact[],
  addAudience: string | null,
  now: Date,
): Promise<{
  created: number;
  updated: number;
  raced: string[];
  createdIds: string[];
  updatedIds: string[];
}> {
  if (batch.length === 0) return { created: 0, updated: 0, raced: [], createdIds: [], updatedIds: [] };
  const { rows } = await db.query<{ id: string; email: string; inserted: boolean }>(
    `WITH r AS (
       SELECT r.id, r.email, r.first_name, r.last_name, r.attributes, r.subscribed, r.properties,
              CASE WHEN r.audiences IS NULL THEN NULL
                   ELSE ARRAY(SELECT jsonb_array_elements_text(r.audiences)) END AS audiences
         FROM jsonb_to_recordset($2::jsonb) AS r(id text, email text, first_name text, last_name text,
                                                 attributes jsonb, subscribed boolean, audiences jsonb,
                                                 properties jsonb)
     ),
     upd AS (
       UPDATE contacts c SET
         first_name = COALESCE(r.first_name, c.first_name),
         last_name  = COALESCE(r.last_name, c.last_name),
         attributes = COALESCE(r.attributes, c.attributes),
         properties = c.properties || COALESCE(r.properties, '{}'),
         unsubscribed_at = CASE WHEN c.subscribed AND r.subscribed = false THEN $3 ELSE c.unsubscribed_at END,
         subscribed = c.subscribed AND COALESCE(r.subscribed, true),
         audiences  = CASE WHEN $4::text IS NULL OR $4::text = ANY(COALESCE(r.audiences, c.audiences))
                           THEN COALESCE(r.audiences, c.audiences)
                           ELSE COALESCE(r.audiences, c.audiences) || $4::text END,
         updated_at = $3
         FROM r
        WHERE c.tenant_id = $1 AND c.email = r.email
       RETURNING c.id, c.email
     ),
     ins AS (
       INSERT INTO contacts (tenant_id, id, email, first_name, last_name, attributes, subscribed,
                             unsubscribed_at, audiences, created_at, updated_at, properties)
       SELECT $1, r.id, r.email, r.first_name, r.last_name, COALESCE(r.attributes, '{}'),
              COALESCE(r.subscribed, true),
              CASE WHEN r.subscribed = false THEN $3::timestamptz END,
              CASE WHEN $4::text IS NULL OR $4::text = ANY(COALESCE(r.audiences, '{}'))
                   THEN COALESCE(r.audiences, '{}') ELSE COALESCE(r.audiences, '{}') || $4::text END,
              $3, $3, COALESCE(r.properties, '{}')
         FROM r
        WHERE r.email NOT IN (SELECT email FROM upd)
       ON CONFLICT (tenant_id, email) DO NOTHING
       RETURNING id, email
     )
     SELECT id, email, false AS inserted FROM upd
     UNION ALL
     SELECT id, email, true AS inserted FROM ins`,
    [tenantId, JSON.stringify(batch.map(toRecord)), now, addAudience],
  );
  const created = rows.filter((r) => r.inserted).length;
  const written = new Set(rows.map((r) => r.email));
  return {
    created,
    updated: rows.length - created,
    raced: batch.filter((c) => !written.has(c.email)).map((c) => c.email),
    createdIds: rows.filter((r) => r.inserted).map((r) => r.id),
    updatedIds: rows.filter((r) => !r.inserted).map((r) => r.id),
  };
}

function toRecord(c: ImportedContact) {
  return {
    id: c.id,
    email: c.email,
    first_name: c.firstName,
    last_name: c.lastName,
    attributes: c.attributes,
    subscribed: c.subscribed,
    audiences: c.audiences,
    properties: c.properties ?? null,
  };
}

/** Every contact of the tenant (or of one audience) in id order, `batchSize` rows per query. */
export async function* exportContacts(
  db: Queryable,
  tenantId: string,
  audience: string | undefined,
  batchSize = 1000,
): AsyncGenerator<Contact[], void, undefined> {
  let after = '';
  for (;;) {
    const { rows } = await db.query<ContactRow>(
      `SELECT ${COLUMNS} FROM contacts
        WHERE tenant_id = $1 AND id > $2 AND ($3::text IS NULL OR audiences @> ARRAY[$3::text])
        ORDER BY id LIMIT $4`,
      [tenantId, after, audience ?? null, batchSize],
    );
    if (rows.length === 0) return;
    yield rows.map(toContact);
    after = rows[rows.length - 1]!.id;
    if (rows.length < batchSize) return;
  }
}
