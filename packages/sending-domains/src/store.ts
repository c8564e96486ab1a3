import type { Domain, DomainEvent, DomainRecord, DomainStatus } from '@tern/contracts';
import { claimDue } from '@tern/jobs';
import { deleteTenantRow, type Page, type PageWindow, tenantRecords, withTransaction } from '@tern/kernel';
import type pg from 'pg';
import type { CheckOutcome } from './status.js';

/**
 * The one owner of `sending_domains` (SPEC §20; migration 0100): every statement on the table is
 * here. The sealed private key is read by {@link findSigningKey} only; every other read leaves
 * that column out, so no route, log line or event can carry it by accident.
 */

type Queryable = Pick<pg.Pool, 'query'>;

/** A domain as the verification reads and writes it (no key material). */
export interface DomainRow {
  tenantId: string;
  id: string;
  name: string;
  selector: string;
  status: DomainStatus;
  records: DomainRecord[];
  reason: string | null;
  createdAt: Date;
  pendingSince: Date;
  verifiedAt: Date | null;
  lastCheckedAt: Date | null;
  nextCheckAt: Date | null;
  /** Bumped by every saved check: a check computed on an older version is not saved. */
  version: number;
  /** Changes to verified or failed so far: numbers the events' ids. */
  transitions: number;
}

/** The table's row: the fields of a `DomainRow` named alike in SQL, and the snake_case others. */
type Row = Pick<
  DomainRow,
  'id' | 'name' | 'selector' | 'status' | 'records' | 'reason' | 'version' | 'transitions'
> & {
  tenant_id: string;
  created_at: Date;
  pending_since: Date;
  verified_at: Date | null;
  last_checked_at: Date | null;
  next_check_at: Date | null;
};

const COLUMNS = `tenant_id, id, name, selector, status, records, reason, created_at, pending_since, verified_at,
  last_checked_at, next_check_at, version, transitions`;

const toRow = (r: Row): DomainRow => ({
  tenantId: r.tenant_id,
  id: r.id,
  name: r.name,
  selector: r.selector,
  status: r.status,
  records: r.records,
  reason: r.reason,
  createdAt: r.created_at,
  pendingSince: r.pending_since,
  verifiedAt: r.verified_at,
  lastCheckedAt: r.last_checked_at,
  nextCheckAt: r.next_check_at,
  version: r.version,
  transitions: r.transitions,
});
const DOMAINS = tenantRecords<Row, DomainRow>({ table: 'sending_domains', columns: COLUMNS, map: toRow });

/** The API's view of a domain. */
export const toDomain = (r: DomainRow): Domain => ({
  id: r.id,
  name: r.name,
  status: r.status,
  records: r.records.map((x) => ({
    purpose: x.purpose,
    type: x.type,
    name: x.name,
    value: x.value,
    status: x.status,
  })),
  receiving: r.records.some((x) => x.purpose === 'inbound_mx'),
  reason: r.reason,
  createdAt: r.createdAt.toISOString(),
  verifiedAt: r.verifiedAt?.toISOString() ?? null,
  lastCheckedAt: r.lastCheckedAt?.toISOString() ?? null,
});

export interface NewDomain {
  tenantId: string;
  id: string;
  name: string;
  selector: string;
  /** The sealed PKCS#8 PEM (SecretBox). */
  privateKeyEnc: string;
  records: DomainRecord[];
  nextCheckAt: Date;
}

/** The tenant's domains: how many, and whether `name` is one of them. */
export async function domainCount(
  db: Queryable,
  tenantId: string,
  name: string,
): Promise<{ count: number; taken: boolean }> {
  const { rows } = await db.query<{ n: number; taken: boolean | null }>(
    'SELECT count(*)::int AS n, bool_or(name = $2) AS taken FROM sending_domains WHERE tenant_id = $1',
    [tenantId, name],
  );
  return { count: rows[0]?.n ?? 0, taken: rows[0]?.taken === true };
}

/**
 * Inserts a pending domain: `exists` when the tenant already has one of that name (SPEC §20: 409),
 * `limit` when it has `maxPerTenant` (issue 40 item 11). The count and the insert hold the tenant's
 * advisory lock, so concurrent adds cannot pass the limit together.
 */
export async function insertDomain(
  pool: pg.Pool,
  d: NewDomain,
  now: Date,
  maxPerTenant: number,
): Promise<DomainRow | 'exists' | 'limit'> {
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
      `sending_domains:${d.tenantId}`,
    ]);
    const { count, taken } = await domainCount(client, d.tenantId, d.name);
    if (taken) return 'exists';
    if (count >= maxPerTenant) return 'limit';
    const { rows } = await client.query<Row>(
      `INSERT INTO sending_domains
         (tenant_id, id, name, selector, private_key_enc, records, status, created_at, updated_at, pending_since,
          next_check_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'pending', $7, $7, $7, $8)
       ON CONFLICT (tenant_id, name) DO NOTHING
       RETURNING ${COLUMNS}`,
      [d.tenantId, d.id, d.name, d.selector, d.privateKeyEnc, JSON.stringify(d.records), now, d.nextCheckAt],
    );
    return rows[0] ? toRow(rows[0]) : 'exists';
  });
}

export function getDomain(db: Queryable, tenantId: string, id: string): Promise<DomainRow | null> {
  return DOMAINS.get(db, tenantId, id);
}

/** One page, newest first. */
export function listDomains(db: Queryable, tenantId: string, window: PageWindow): Promise<Page<DomainRow>> {
  return DOMAINS.newestFirst(db, tenantId, window);
}

/** Deletes the domain and its sealed key; its mail is no longer signed from the next lookup on. */
export function deleteDomain(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  return deleteTenantRow(db, 'sending_domains', tenantId, id);
}

/**
 * Claims domains whose check is due (`FOR UPDATE SKIP LOCKED`): their next check moves to
 * `leaseUntil`, so a checker that dies mid-check leaves them due again then.
 */
export async function claimDueDomains(
  db: Queryable,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<DomainRow[]> {
  const rows = await claimDue<Row>(
    db,
    {
      table: 'sending_domains',
      alias: 'd',
      keys: ['tenant_id', 'id'],
      due: 'next_check_at <= $1',
      orderBy: 'next_check_at',
      limit: '$3',
      set: 'next_check_at = $2',
      returning: COLUMNS.split(',')
        .map((c) => `d.${c.trim()}`)
        .join(', '),
    },
    [now, leaseUntil, limit],
  );
  return rows.map(toRow);
}

/**
 * Saves a check if nobody saved another since `version` was read, with the event it emits queued
 * in `pending_events` in the same statement (an outbox: appended to the log, then removed by
 * {@link clearEvents}). Null when another check won; the caller reads the domain again.
 */
export async function saveCheck(
  db: Queryable,
  row: Pick<DomainRow, 'tenantId' | 'id' | 'version'>,
  outcome: CheckOutcome,
  event: DomainEvent | null,
  now: Date,
): Promise<DomainRow | null> {
  const { rows } = await db.query<Row>(
    `UPDATE sending_domains SET
       status = $4, records = $5::jsonb, reason = $6, pending_since = $7, verified_at = $8, next_check_at = $9,
       last_checked_at = $10, updated_at = $10, version = version + 1,
       transitions = transitions + CASE WHEN $11::jsonb IS NULL THEN 0 ELSE 1 END,
       pending_events = CASE WHEN $11::jsonb IS NULL THEN pending_events ELSE pending_events || jsonb_build_array($11::jsonb) END
     WHERE tenant_id = $1 AND id = $2 AND version = $3
     RETURNING ${COLUMNS}`,
    [
      row.tenantId,
      row.id,
      row.version,
      outcome.status,
      JSON.stringify(outcome.records),
      outcome.reason,
      outcome.pendingSince,
      outcome.verifiedAt,
      outcome.nextCheckAt,
      now,
      event === null ? null : JSON.stringify(event),
    ],
  );
  return rows[0] ? toRow(rows[0]) : null;
}

/** Domain events saved but not yet known to be in the log (oldest first). */
export async function eventsToAppend(db: Queryable, limit: number): Promise<DomainEvent[]> {
  const { rows } = await db.query<{ e: DomainEvent }>(
    `SELECT e FROM (SELECT pending_events, updated_at FROM sending_domains
                     WHERE pending_events <> '[]'::jsonb ORDER BY updated_at LIMIT $1) d,
            jsonb_array_elements(d.pending_events) AS e`,
    [limit],
  );
  return rows.map((r) => r.e);
}

/** Removes appended events from their domains' outbox. */
export async function clearEvents(db: Queryable, events: readonly DomainEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.query(
    `UPDATE sending_domains d SET pending_events = COALESCE(
       (SELECT jsonb_agg(e) FROM jsonb_array_elements(d.pending_events) e WHERE NOT (e->>'id' = ANY($3::text[]))),
       '[]'::jsonb)
     FROM unnest($1::text[], $2::text[]) AS u(t, i)
     WHERE d.tenant_id = u.t AND d.id = u.i`,
    [events.map((e) => e.tenantId), events.map((e) => e.domainId), events.map((e) => e.id)],
  );
}

/** The verified domain that signs for these names (most specific first), with its sealed key. */
export async function findSigningKey(
  db: Queryable,
  tenantId: string,
  candidates: readonly string[],
): Promise<{ name: string; selector: string; privateKeyEnc: string; records: DomainRecord[] } | null> {
  if (candidates.length === 0) return null;
  const { rows } = await db.query<{
    name: string;
    selector: string;
    private_key_enc: string;
    records: DomainRecord[];
  }>(
    `SELECT name, selector, private_key_enc, records FROM sending_domains
      WHERE tenant_id = $1 AND name = ANY($2::text[]) AND status = 'verified'
      ORDER BY length(name) DESC LIMIT 1`,
    [tenantId, candidates],
  );
  const r = rows[0];
  return r
    ? { name: r.name, selector: r.selector, privateKeyEnc: r.private_key_enc, records: r.records }
    : null;
}

/** Which of these names the tenant has verified. */
export async function verifiedNames(
  db: Queryable,
  tenantId: string,
  names: readonly string[],
): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM sending_domains WHERE tenant_id = $1 AND name = ANY($2::text[]) AND status = 'verified'`,
    [tenantId, names],
  );
  return new Set(rows.map((r) => r.name));
}

/** The tenant's verified domain names, oldest first (a forward's From when the receiving address is not one, SPEC §24). */
export async function verifiedDomainNames(db: Queryable, tenantId: string, limit = 10): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM sending_domains WHERE tenant_id = $1 AND status = 'verified' ORDER BY created_at, name LIMIT $2`,
    [tenantId, limit],
  );
  return rows.map((r) => r.name);
}

/**
 * The tenants receiving mail at `host` (SPEC §24): a domain of theirs with `receiving: true`
 * whose `inbound_mx` record is verified.
 */
export async function receivingTenants(db: Queryable, host: string): Promise<string[]> {
  const { rows } = await db.query<{ tenant_id: string }>(
    `SELECT tenant_id FROM sending_domains
     WHERE name = $1 AND EXISTS (
       SELECT 1 FROM jsonb_array_elements(records) r
       WHERE r->>'purpose' = 'inbound_mx' AND r->>'status' = 'verified')`,
    [host.toLowerCase()],
  );
  return rows.map((r) => r.tenant_id);
}

/** Replaces a domain's records (receiving on or off, SPEC §24); the next check sets their status. */
export async function setDomainRecords(
  db: Queryable,
  tenantId: string,
  id: string,
  records: readonly DomainRecord[],
  now: Date,
): Promise<boolean> {
  const result = await db.query(
    `UPDATE sending_domains SET records = $3::jsonb, updated_at = $4, version = version + 1
     WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, JSON.stringify(records), now],
  );
  return (result.rowCount ?? 0) > 0;
}
