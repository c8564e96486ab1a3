import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPool } from '../../../test/support/services.js';
import { withTransaction } from '../src/transaction.js';

const db = freshPool({ max: 2, prepare: (pool) => pool.query('CREATE TABLE items (id int PRIMARY KEY)') });
beforeAll(db.open);
afterAll(db.close);

const ids = async () =>
  (await db.pool.query<{ id: number }>('SELECT id FROM items ORDER BY id')).rows.map((r) => r.id);

describe('withTransaction', () => {
  it('commits what fn wrote and resolves with its value', async () => {
    const value = await withTransaction(db.pool, async (client) => {
      await client.query('INSERT INTO items VALUES (1), (2)');
      return 'done';
    });
    expect(value).toBe('done');
    expect(await ids()).toEqual([1, 2]);
  });

  it('rolls everything back when fn throws, rethrowing its error', async () => {
    await expect(
      withTransaction(db.pool, async (client) => {
        await client.query('INSERT INTO items VALUES (3)');
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    // A failing statement aborts the transaction: the rollback still leaves nothing behind.
    await expect(
      withTransaction(db.pool, async (client) => {
        await client.query('INSERT INTO items VALUES (4)');
        await client.query('INSERT INTO items VALUES (1)');
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await ids()).toEqual([1, 2]);
    // The clients went back to the pool healthy.
    expect(db.pool.totalCount).toBeLessThanOrEqual(2);
    expect(db.pool.waitingCount).toBe(0);
  });

  it('drops a client whose connection was cut mid-transaction instead of handing it out again', async () => {
    let pid = 0;
    await expect(
      withTransaction(db.pool, async (client) => {
        pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
        await client.query('INSERT INTO items VALUES (5)');
      }),
    ).rejects.toThrow();
    expect(await ids()).toEqual([1, 2]);
    // Every client the pool holds now is alive: the killed one was released with its error.
    const clients = await Promise.all([db.pool.connect(), db.pool.connect()]);
    try {
      for (const c of clients) {
        const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        expect(rows[0]!.pid).not.toBe(pid);
      }
    } finally {
      for (const c of clients) c.release();
    }
  });
});
