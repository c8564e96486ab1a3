import type pg from 'pg';
import { claimDueSql } from './claim-due.js';

/**
 * The lease claim of the jobs whose rows, keyed by tenant and id, carry their lease in
 * `lease_owner` and `lease_until` (the automation runner's runs and trigger inbox, the sequence
 * scheduler's enrollments): up to `batchSize` rows that are `ready` (when given) and not leased at
 * `at` (no lease, or a lapsed one), oldest `orderBy` first, leased to `owner` until `leaseUntil`.
 * Its statement's parameters: `$1` owner, `$2` leaseUntil, `$3` at, `$4` batchSize.
 */
export interface LeaseClaimSpec {
  table: string;
  alias: string;
  /** Which rows are due besides unleased (`$3` the claim's time); absent: every unleased row. */
  ready?: string;
  orderBy: string;
  returning: string;
  /** The statement around the claim, e.g. `WITH claimed AS (${claim}) SELECT …`; absent: the claim alone. */
  around?: (claim: string) => string;
}

/** The claim statement of `spec` (without `around`). */
export function leaseClaimSql(spec: LeaseClaimSpec): string {
  const unleased = 'lease_until IS NULL OR lease_until < $3';
  return claimDueSql({
    table: spec.table,
    alias: spec.alias,
    keys: ['tenant_id', 'id'],
    due: spec.ready === undefined ? unleased : `${spec.ready} AND (${unleased})`,
    orderBy: spec.orderBy,
    limit: '$4',
    set: 'lease_owner = $1, lease_until = $2',
    returning: spec.returning,
  });
}

/** The claim of `spec` as a function: resolves with the rows it claimed (as `around` reads them). */
export function leaseClaim<R extends pg.QueryResultRow>(spec: LeaseClaimSpec) {
  return async (
    db: Pick<pg.Pool, 'query'>,
    owner: string,
    leaseUntil: Date,
    at: Date,
    batchSize: number,
  ): Promise<R[]> => {
    const claim = leaseClaimSql(spec);
    const { rows } = await db.query<R>(spec.around ? spec.around(claim) : claim, [
      owner,
      leaseUntil,
      at,
      batchSize,
    ]);
    return rows;
  };
}
