import { claimDueSql } from '@tern/jobs';

/**
 * The claim statement of the bulk jobs' rows, keyed by tenant and id (the runner's runs and trigger
 * inbox, the scheduler's enrollments): up to `$4` rows that are `ready` (when given) and not leased
 * at `$3` (no lease, or a lapsed one), oldest `orderBy` first, leased to `$1` until `$2`. Its
 * parameters: `[owner, leaseUntil, at, batchSize]`.
 */
export function leasedClaimSql(spec: {
  table: string;
  alias: string;
  ready?: string;
  orderBy: string;
  returning: string;
}): string {
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
