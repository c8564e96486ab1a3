import type pg from 'pg';

/** What `withTransaction` needs of a pool: a pg `Pool` (server or embedded PGlite) fits. */
export interface TransactionPool<C extends pg.PoolClient = pg.PoolClient> {
  connect(): Promise<C>;
}

/**
 * Runs `fn` in one transaction on a client of `pool`: `BEGIN`, then `COMMIT` when `fn` resolves
 * (resolving with its value) or `ROLLBACK` when it throws (rethrowing). The client goes back to
 * the pool — or is dropped when its connection broke meanwhile (an `error` it emitted between two
 * queries, which is heard here so it cannot crash the process, or a failed `ROLLBACK`), so the
 * pool never hands out a dead connection.
 */
export async function withTransaction<T, C extends pg.PoolClient = pg.PoolClient>(
  pool: TransactionPool<C>,
  fn: (client: C) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken ??= rollbackError;
    });
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
