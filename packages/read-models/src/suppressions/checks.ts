import { erasedRecipientSql, type Keyring } from '@tern/privacy';
import type pg from 'pg';

/**
 * Is this address suppressed (SPEC §11, §13)? The questions the sender asks before handing an
 * email to a provider, and the predicate bulk mail embeds. Addresses are stored and compared
 * lowercased (the table's CHECK is `email = lower(email)`).
 */

/**
 * The address as given, trimmed; SQL `lower()` makes it the stored form, so the API, the sender
 * and the projector lowercase alike.
 */
export const normaliseAddress = (email: string) => email.trim();

/**
 * An `EXISTS (…)` predicate: the tenant `tenantExpr` has the address `emailExpr` (SQL expressions
 * of the caller's statement, the address in its stored, lowercased form) on its suppression list.
 * packages/bulk embeds it: a contact a campaign reaches (`reachableContactSql`) and the sequence
 * scheduler's claim, each one statement with its contacts.
 */
export const suppressedSql = (tenantExpr: string, emailExpr: string) =>
  `EXISTS (SELECT 1 FROM suppressions supp WHERE supp.tenant_id = ${tenantExpr} AND supp.email = ${emailExpr})`;

// The statements below with the fragments in them, composed once.
const SUPPRESSED_AMONG_SQL = `SELECT q.n FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(t, e, n)
  WHERE ${suppressedSql('q.t', 'lower(q.e)')}`;
const CHECK_ONE_SQL = `SELECT 1 FROM suppressions WHERE tenant_id = $1 AND email = lower($2)
  UNION ALL
  SELECT 1 WHERE ${erasedRecipientSql('$1', '$3')}
  LIMIT 1`;
const CHECK_MANY_SQL = `SELECT q.n FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS q(t, e, h, n)
  WHERE ${suppressedSql('q.t', 'lower(q.e)')}
     OR ${erasedRecipientSql('q.t', 'q.h')}`;

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
  const { rows } = await pool.query<{ n: number }>(SUPPRESSED_AMONG_SQL, [
    items.map((i) => i.tenantId),
    items.map((i) => normaliseAddress(i.email)),
  ]);
  const hit = new Set(rows.map((r) => Number(r.n)));
  return items.map((_, i) => hit.has(i + 1));
}

/**
 * The sender's suppression check (SPEC §11, §14): the clear list, and the addresses erased from
 * the tenant, which are kept only as their keyed hash (packages/privacy's erasure record).
 */
export function suppressionCheck(keyring: Pick<Keyring, 'recipientHash'>) {
  return async (pool: pg.Pool | pg.PoolClient, tenantId: string, email: string): Promise<boolean> => {
    const { rows } = await pool.query(CHECK_ONE_SQL, [
      tenantId,
      normaliseAddress(email),
      keyring.recipientHash(tenantId, email),
    ]);
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
    const { rows } = await pool.query<{ n: number }>(CHECK_MANY_SQL, [
      items.map((i) => i.tenantId),
      items.map((i) => normaliseAddress(i.email)),
      items.map((i) => keyring.recipientHash(i.tenantId, i.email)),
    ]);
    const hit = new Set(rows.map((r) => Number(r.n)));
    return items.map((_, i) => hit.has(i + 1));
  };
}
