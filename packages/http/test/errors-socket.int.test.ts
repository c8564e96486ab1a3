import { ERROR_CODES, type ErrorStatus, errorBodySchemaFor } from '@tern/contracts';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installErrorHandlers } from '../src/index.js';

// Issue 25, item 3: over a real socket, the bodies the handler writes for a missing route, a
// failed validation, a bug and an unreachable store each carry a code of the closed enum, the
// one of its status. The store errors are real: a query Postgres refuses as a bug (an unknown
// column) and a pool whose server does not listen.

const live = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres', max: 1 });
const gone = new pg.Pool({
  connectionString: 'postgres://nobody@127.0.0.1:9/none',
  connectionTimeoutMillis: 500,
});
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  app = Fastify();
  installErrorHandlers(app);
  app.get('/bug', async () => (await live.query('SELECT no_such_column FROM pg_class LIMIT 1')).rows);
  app.get('/down', async () => (await gone.query('SELECT 1')).rows);
  app.post(
    '/strict',
    { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
    async () => ({ ok: true }),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  await live.end();
  await gone.end();
});

async function body(path: string, status: ErrorStatus, code: string, init?: RequestInit) {
  const res = await fetch(`${base}${path}`, init);
  expect(res.status).toBe(status);
  const json = (await res.json()) as Record<string, unknown>;
  expect(ERROR_CODES).toContain(json.code);
  expect(errorBodySchemaFor(status).safeParse(json).success, JSON.stringify(json)).toBe(true);
  expect(json.code).toBe(code);
  return { res, json };
}

describe('error bodies over a socket carry a code of ERROR_CODES', () => {
  it('404: a route this server does not have is ROUTE_NOT_FOUND', async () => {
    const { json } = await body('/no/such/route?q=1', 404, 'ROUTE_NOT_FOUND');
    expect(json.message).toBe('Route GET /no/such/route not found');
  });

  it('400: a body that fails its schema is FST_ERR_VALIDATION, naming the missing field', async () => {
    const { json } = await body('/strict', 400, 'FST_ERR_VALIDATION', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ other: 'x' }),
    });
    expect(json.message).toContain('name');
  });

  it('500: a query Postgres refuses as a bug is INTERNAL_ERROR, its message hidden', async () => {
    const { json } = await body('/bug', 500, 'INTERNAL_ERROR');
    expect(json.message).toBe('Internal Server Error');
    expect(JSON.stringify(json)).not.toContain('no_such_column');
  });

  it('503: a store that does not listen is UNAVAILABLE with Retry-After', async () => {
    const { res } = await body('/down', 503, 'UNAVAILABLE');
    expect(res.headers.get('retry-after')).toBe('5');
  });
});
