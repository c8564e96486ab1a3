import type pg from 'pg';

/**
 * Runs `work` in one transaction on a client of `pool`: COMMIT when it resolves, ROLLBACK (and the
 * error rethrown) when it throws. Local to the sender until a shared helper exists.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
