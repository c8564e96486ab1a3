import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { runPostgresAdapterSuite } from './postgres-adapter.suite.js';

// A Postgres server; a pool larger than 2 so consumers are woken by LISTEN/NOTIFY.
let pool: pg.Pool;

beforeAll(() => {
  pool = new pg.Pool({
    connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    max: 6,
  });
});

afterAll(async () => {
  await pool.end();
});

runPostgresAdapterSuite('postgres server', () => pool, { listens: true });
