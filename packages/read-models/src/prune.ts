import type pg from 'pg';

/** A table a retention job prunes in batches, by the time column `at`. */
export interface PrunedTable {
  /** A table of the caller's own (the read model that owns it names it). */
  table: string;
  at: string;
  /** `id`: the batch is the oldest ids (`ORDER BY id`); else any rows, picked by `ctid`. */
  key: 'ctid' | 'id';
}

/** The pruner of `t`: deletes up to `limit` rows whose `t.at` is before `cutoff`, resolves with how many. */
export function batchPruner(t: PrunedTable) {
  const sql = `DELETE FROM ${t.table} WHERE ${t.key} IN (
       SELECT ${t.key} FROM ${t.table} WHERE ${t.at} < $1${t.key === 'id' ? ' ORDER BY id' : ''} LIMIT $2)`;
  return async (db: pg.Pool | pg.ClientBase, cutoff: Date, limit: number): Promise<number> =>
    (await db.query(sql, [cutoff, limit])).rowCount ?? 0;
}
