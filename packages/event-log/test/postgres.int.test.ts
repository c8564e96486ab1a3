import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { serverPool } from './helpers.js';
import { runPostgresAdapterSuite } from './postgres-adapter.suite.js';

// A Postgres server; a pool larger than 2 so consumers are woken by LISTEN/NOTIFY.
let pool: pg.Pool;
beforeAll(() => {
  pool = serverPool({ max: 6 });
});
afterAll(() => pool.end());

runPostgresAdapterSuite('postgres server', () => pool, { listens: true });
