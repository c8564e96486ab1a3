import { bindPool, type Repository } from '@tern/jobs';
import {
  addSuppression,
  getSuppression,
  isSuppressed,
  listSuppressions,
  removeSuppression,
} from '@tern/read-models';
import type pg from 'pg';

const suppressionStatements = {
  isSuppressed,
  add: addSuppression,
  get: getSuppression,
  list: listSuppressions,
  remove: removeSuppression,
};

/**
 * The suppressions repository (`ApiStores.suppressions`): the statements of the suppression list
 * (SPEC §13) are its owner's, packages/read-models (`suppressions/`), bound here to one pool.
 */
export type SuppressionStore = Repository<typeof suppressionStatements>;

export function createSuppressionStore(pool: pg.Pool): SuppressionStore {
  return bindPool(pool, suppressionStatements);
}
