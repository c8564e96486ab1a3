import { bindPool, type Repository } from '@tern/kernel';
import type pg from 'pg';
import { isSuppressed } from './checks.js';
import { addSuppression, getSuppression, listSuppressions, removeSuppression } from './manual.js';

const suppressionStatements = {
  isSuppressed,
  add: addSuppression,
  get: getSuppression,
  list: listSuppressions,
  remove: removeSuppression,
};

/** The suppression list's repository (SPEC §13): its statements over one pool (the api's `/suppressions` routes). */
export type SuppressionStore = Repository<typeof suppressionStatements>;

export function createSuppressionStore(pool: pg.Pool): SuppressionStore {
  return bindPool(pool, suppressionStatements);
}
