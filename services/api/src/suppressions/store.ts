import type { Suppression, SuppressionSource } from '@tern/contracts';
import { bindPool, type PoolBound } from '@tern/jobs';
import type { Keyring } from '@tern/privacy';
import type pg from 'pg';
import { type PageQuery, pageWindow } from '../resource-kit.js';

/**
 * The suppression list in Postgres (`suppressions`, SPEC §13). Addresses are stored and compared
 * lowercased. The sender asks `isSuppressed` before handing an email to a provider (SPEC §11); the
 * projector adds hard bounces and complaints in its own transaction (services/projector pg-sink).
 */

type Row = { email: string; reason: string | null; source: SuppressionSource; created_at: Date };

const toSuppression = (r: Row): Suppression => ({
  email: r.email,
  reason: r.reason,
  source: r.source,
  createdAt: r.created_at.toISOString(),
});

/**
 * The address as given, trimmed; SQL `lower()` makes it the stored form, so the API, the sender
 * and the projector lowercase alike (the table's CHECK is `email = lower(email)`).
 */
export const normaliseAddress = (email: string) => email.trim();

/** True when the tenant suppressed this address (any case). */
export async function isSuppressed(
  pool: pg.Pool | pg.PoolClient,
  tenantId: string,
  email: string,
): Promise<boolean> {
  const { rows } = await pool.query('SELECT 1 FROM suppressions WHERE tenant_id = $1 AND email = lower($2)', [
    tenantId,
    normaliseAddress(email),
  ]);
  return rows.length > 0;
}

/** `isSuppressed` for many (tenant, address) pairs in one query; the answers in the order asked. */
export async function suppressedAmong(
  pool: pg.Pool | pg.PoolClient,
  items: readonly { tenantId: string; email: string }[],
): Promise<boolean[]> {
  if (items.length === 0) return [];
  const { rows } = await pool.query<{ n: number }>(
    `SELECT q.n FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(t, e, n)
      WHERE EXISTS (SELECT 1 FROM suppressions s WHERE s.tenant_id = q.t AND s.email = lower(q.e))`,
    [items.map((i) => i.tenantId), items.map((i) => normaliseAddress(i.email))],
  );
  const hit = new Set(rows.map((r) => Number(r.n)));
  return items.map((_, i) => hit.has(i + 1));
}

/**
 * The sender's suppression check (SPEC §11, §14): the clear list, and the addresses erased from
 * the tenant, which are kept only as their keyed hash (`erased_recipients`).
 */
export function suppressionCheck(keyring: Pick<Keyring, 'recipientHash'>) {
  return async (pool: pg.Pool | pg.PoolClient, tenantId: string, email: string): Promise<boolean> => {
    const { rows } = await pool.query(
      `SELECT 1 FROM suppressions WHERE tenant_id = $1 AND email = lower($2)
       UNION ALL
       SELECT 1 FROM erased_recipients WHERE tenant_id = $1 AND recipient_hash = $3
       LIMIT 1`,
      [tenantId, normaliseAddress(email), keyring.recipientHash(tenantId, email)],
    );
    return rows.length > 0;
  };
}

/** `suppressionCheck` for a whole claim round in one query (the sender's `suppressedAmong`). */
export function suppressionCheckMany(keyring: Pick<Keyring, 'recipientHash'>) {
  return async (
    pool: pg.Pool | pg.PoolClient,
    items: readonly { tenantId: string; email: string }[],
  ): Promise<boolean[]> => {
    if (items.length === 0) return [];
    const { rows } = await pool.query<{ n: number }>(
      `SELECT q.n FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS q(t, e, h, n)
        WHERE EXISTS (SELECT 1 FROM suppressions s WHERE s.tenant_id = q.t AND s.email = lower(q.e))
           OR EXISTS (SELECT 1 FROM erased_recipients r WHERE r.tenant_id = q.t AND r.recipient_hash = q.h)`,
      [
        items.map((i) => i.tenantId),
        items.map((i) => normaliseAddress(i.email)),
        items.map((i) => keyring.recipientHash(i.tenantId, i.email)),
      ],
    );
    const hit = new Set(rows.map((r) => Number(r.n)));
    return items.map((_, i) => hit.has(i + 1));
  };
}

/**
 * Adds the address unless it is there already. `created: false` → the existing entry, unchanged
 * (its reason and source stay).
 */
export async function addSuppression(
  pool: pg.Pool,
  tenantId: string,
  input: { email: string; reason: string | null; source: SuppressionSource },
  at: Date,
): Promise<{ created: boolean; suppression: Suppression }> {
  const email = normaliseAddress(input.email);
  const inserted = await pool.query<Row>(
    `INSERT INTO suppressions (tenant_id, email, reason, source, created_at) VALUES ($1, lower($2), $3, $4, $5)
     ON CONFLICT (tenant_id, email) DO NOTHING
     RETURNING email, reason, source, created_at`,
    [tenantId, email, input.reason, input.source, at],
  );
  if (inserted.rows[0]) return { created: true, suppression: toSuppression(inserted.rows[0]) };
  const existing = await getSuppression(pool, tenantId, email);
  // Deleted between the two statements: add it again.
  if (existing === null) return addSuppression(pool, tenantId, input, at);
  return { created: false, suppression: existing };
}

export async function getSuppression(
  pool: pg.Pool,
  tenantId: string,
  email: string,
): Promise<Suppression | null> {
  const { rows } = await pool.query<Row>(
    'SELECT email, reason, source, created_at FROM suppressions WHERE tenant_id = $1 AND email = lower($2)',
    [tenantId, normaliseAddress(email)],
  );
  return rows[0] ? toSuppression(rows[0]) : null;
}

/** One page, newest first (`created_at DESC, email DESC`), and the tenant's total. */
export async function listSuppressions(
  pool: pg.Pool,
  tenantId: string,
  page: PageQuery,
): Promise<{ items: Suppression[]; total: number }> {
  const { limit, offset } = pageWindow(page);
  const [count, list] = await Promise.all([
    pool.query<{ total: string }>('SELECT count(*) AS total FROM suppressions WHERE tenant_id = $1', [
      tenantId,
    ]),
    pool.query<Row>(
      `SELECT email, reason, source, created_at FROM suppressions
        WHERE tenant_id = $1
        ORDER BY created_at DESC, email COLLATE "C" DESC
        LIMIT $2 OFFSET $3::bigint`,
      [tenantId, limit, offset],
    ),
  ]);
  return { items: list.rows.map(toSuppression), total: Number(count.rows[0]?.total ?? 0) };
}

/** False when the address was not on the tenant's list. */
export async function removeSuppression(pool: pg.Pool, tenantId: string, email: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    'DELETE FROM suppressions WHERE tenant_id = $1 AND email = lower($2)',
    [tenantId, normaliseAddress(email)],
  );
  return (rowCount ?? 0) > 0;
}

/** The suppressions repository: the functions above over one pool (`ApiStores.suppressions`). */
export interface SuppressionStore {
  isSuppressed: PoolBound<typeof isSuppressed>;
  add: PoolBound<typeof addSuppression>;
  get: PoolBound<typeof getSuppression>;
  list: PoolBound<typeof listSuppressions>;
  remove: PoolBound<typeof removeSuppression>;
}

export function createSuppressionStore(pool: pg.Pool): SuppressionStore {
  return bindPool(pool, {
    isSuppressed,
    add: addSuppression,
    get: getSuppression,
    list: listSuppressions,
    remove: removeSuppression,
  });
}
