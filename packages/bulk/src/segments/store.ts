import type { Contact } from '@tern/contracts';
import type { Segment } from '@tern/contracts/wire';
import { type Page, type PageWindow, tenantRecords, withTransaction } from '@tern/kernel';
import type pg from 'pg';
import { COLUMNS, type ContactRow, toContact } from '../contacts/store.js';
import { compileSegmentFilter, type SegmentFilter } from './filter.js';

/** Segments (SPEC §27): a named filter, evaluated whenever it is read. */

type Queryable = Pick<pg.Pool, 'query'>;

/** A segment as the API shows it (the contracts' type). */
export type { Segment };

interface Row {
  id: string;
  name: string;
  filter: SegmentFilter;
  created_at: Date;
  updated_at: Date;
}

const SEGMENT_COLUMNS = 'id, name, filter, created_at, updated_at';
const toSegment = (r: Row): Segment => ({
  id: r.id,
  name: r.name,
  filter: r.filter,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
const SEGMENTS = tenantRecords<Row, Segment>({ table: 'segments', columns: SEGMENT_COLUMNS, map: toSegment });

export async function insertSegment(
  db: Queryable,
  tenantId: string,
  s: { id: string; name: string; filter: SegmentFilter },
  at: Date,
): Promise<Segment> {
  const { rows } = await db.query<Row>(
    `INSERT INTO segments (tenant_id, id, name, filter, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $5) RETURNING ${SEGMENT_COLUMNS}`,
    [tenantId, s.id, s.name, JSON.stringify(s.filter), at],
  );
  return toSegment(rows[0]!);
}

export function getSegment(db: Queryable, tenantId: string, id: string): Promise<Segment | null> {
  return SEGMENTS.get(db, tenantId, id);
}

export function listSegments(db: Queryable, tenantId: string, q: PageWindow): Promise<Page<Segment>> {
  return SEGMENTS.newestFirst(db, tenantId, q);
}

export async function updateSegment(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: { name?: string | undefined; filter?: SegmentFilter | undefined },
  at: Date,
): Promise<Segment | null> {
  const { rows } = await db.query<Row>(
    `UPDATE segments SET name = COALESCE($3, name), filter = COALESCE($4::jsonb, filter), updated_at = $5
      WHERE tenant_id = $1 AND id = $2 RETURNING ${SEGMENT_COLUMNS}`,
    [tenantId, id, patch.name ?? null, patch.filter === undefined ? null : JSON.stringify(patch.filter), at],
  );
  return rows[0] ? toSegment(rows[0]) : null;
}

/** Deletes a segment; `'in_use'` while a campaign not yet sending names it. */
export async function deleteSegment(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<'deleted' | 'not_found' | 'in_use'> {
  const used = await db.query(
    `SELECT 1 FROM campaigns WHERE tenant_id = $1 AND segment_id = $2 AND status IN ('draft', 'scheduled') LIMIT 1`,
    [tenantId, id],
  );
  const { rowCount } = await db.query(
    `DELETE FROM segments WHERE tenant_id = $1 AND id = $2
        AND NOT EXISTS (SELECT 1 FROM campaigns WHERE tenant_id = $1 AND segment_id = $2 AND status IN ('draft', 'scheduled'))`,
    [tenantId, id],
  );
  if ((rowCount ?? 0) > 0) return 'deleted';
  return (used.rowCount ?? 0) > 0 && (await getSegment(db, tenantId, id)) !== null ? 'in_use' : 'not_found';
}

/**
 * The `work_mem` of a segment's statements: enough for Postgres to hash an engagement clause's
 * addresses (≈ 50 bytes each: a million in ~64 MB) instead of re-running its subquery per contact
 * when the clause sits under `OR` or `NOT`. Set with `SET LOCAL`, so only these statements get it.
 */
export const SEGMENT_WORK_MEM = '64MB';

/** `fn` on one connection with {@link SEGMENT_WORK_MEM}; on a client given, inside its transaction. */
export async function withSegmentSession<T>(db: Queryable, fn: (q: Queryable) => Promise<T>): Promise<T> {
  const run = async (q: Queryable) => {
    await q.query(`SET LOCAL work_mem = '${SEGMENT_WORK_MEM}'`);
    return fn(q);
  };
  return 'totalCount' in db ? withTransaction(db as pg.Pool, run) : run(db);
}

/** How many contacts match a filter at `at` (the engagement windows' end; absent: the database's now). */
export async function countMatching(
  db: Queryable,
  tenantId: string,
  filter: SegmentFilter,
  at?: Date,
): Promise<number> {
  const params: unknown[] = [];
  const where = compileSegmentFilter(filter, { tenantId, params, at });
  // In a segment session: without its work_mem an engagement clause under OR/NOT is not hashed and
  // the count re-runs the clause's subquery per contact (at 1 M contacts: past any timeout).
  const { rows } = await withSegmentSession(db, (q) =>
    q.query<{ total: string }>(`SELECT count(*) AS total FROM contacts c WHERE ${where}`, params),
  );
  return Number(rows[0]?.total ?? 0);
}

/** One page of the contacts matching a filter at `at`, newest first, and their total. */
export async function matchingContacts(
  db: Queryable,
  tenantId: string,
  filter: SegmentFilter,
  q: PageWindow,
  at?: Date,
): Promise<{ data: Contact[]; total: number }> {
  const params: unknown[] = [];
  const where = compileSegmentFilter(filter, { tenantId, params, at });
  const n = params.length;
  const [page, total] = await withSegmentSession(
    db,
    async (conn) =>
      [
        await conn.query<ContactRow>(
          `SELECT ${COLUMNS.split(', ')
            .map((col) => `c.${col}`)
            .join(', ')} FROM contacts c WHERE ${where}
        ORDER BY c.created_at DESC, c.id COLLATE "C" DESC LIMIT $${n + 1} OFFSET $${n + 2}::bigint`,
          [...params, q.limit, q.offset],
        ),
        // The same compiled filter and session: no second compile, no second SET LOCAL.
        await conn.query<{ total: string }>(
          `SELECT count(*) AS total FROM contacts c WHERE ${where}`,
          params,
        ),
      ] as const,
  );
  return { data: page.rows.map(toContact), total: Number(total.rows[0]?.total ?? 0) };
}
