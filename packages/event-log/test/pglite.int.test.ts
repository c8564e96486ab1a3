import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { runPostgresAdapterSuite } from './postgres-adapter.suite.js';

// Embedded mode as the app runs it: in-memory PGlite served on a loopback socket, reached with
// a pg pool of ONE connection (polling only, no LISTEN).
let db: PGlite;
let server: PGLiteSocketServer;
let pool: pg.Pool;

beforeAll(async () => {
  db = await PGlite.create();
  server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  pool = new pg.Pool({ host, port: Number(port), user: 'postgres', database: 'postgres', max: 1 });
});

afterAll(async () => {
  await pool?.end();
  await server?.stop();
  await db?.close();
});

runPostgresAdapterSuite('pglite over a socket, pool of 1', () => pool, { listens: false });
