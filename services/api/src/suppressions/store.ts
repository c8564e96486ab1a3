import { bindPool, type PoolBound } from '@tern/jobs';
import {
  addSuppression,
  getSuppression,
  isSuppressed,
  listSuppressions,
  removeSuppression,
} from '@tern/read-models';
import type pg from 'pg';

/**
 * The suppressions repository (`ApiStores.suppressions`): the statements of the suppression list
 * (SPEC §13) are its owner's, packages/read-models (`suppressions/`), bound here to one pool.
 */
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
