import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { createJwtVerifier } from '@tern/auth';
import { type ErrorStatus, errorBodySchema, errorBodySchemaFor } from '@tern/contracts';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiApp } from '../../src/index.js';
import {
  bearer,
  closeAll,
  createKey,
  JWT_SECRET,
  jwtFor,
  openApp,
  type Stores,
  testTenants,
} from '../support.js';

// SPEC §4 and issue 25: every error body, whatever raised it, is `{ statusCode, error, message,
// code }` with `code` one of the contract's codes of that status — over a real socket.

const { clock, A } = testTenants('errs');
let stores: Stores;
let app: FastifyInstance;
let base: string;
let readKey: string;

beforeAll(async () => {
  ({ stores, app } = await openApp(clock, { limits: { rateLimit: { max: 40, timeWindowMs: 60_000 } } }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  readKey = (await createKey(app, jwtFor(clock, A), A, { scopes: ['templates:read'] })).key;
});

afterAll(() => closeAll(app, stores));

async function call(path: string, init: RequestInit = {}) {
  const res = await fetch(`${base}${path}`, init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const owner = () => ({ ...bearer(jwtFor(clock, A, 'owner')), 'content-type': 'application/json' });

function expectContract(status: ErrorStatus, body: Record<string, unknown>, code: string) {
  expect(errorBodySchema.safeParse(body).success, JSON.stringify(body)).toBe(true);
  expect(errorBodySchemaFor(status).safeParse(body).success, JSON.stringify(body)).toBe(true);
  expect(body.code).toBe(code);
}

describe('every error body carries a code of the contract', () => {
  it.each([
    ['400 validation', () => call('/emails/logs?limit=0', { headers: owner() }), 400, 'FST_ERR_VALIDATION'],
    [
      '400 unreadable JSON',
      () => call('/templates', { method: 'POST', headers: owner(), body: '{' }),
      400,
      'BAD_REQUEST',
    ],
    ['401 no credential', () => call('/templates'), 401, 'MISSING_CREDENTIAL'],
    [
      '401 unknown key',
      () => call('/templates', { headers: { 'x-api-key': 'tern_nope' } }),
      401,
      'INVALID_CREDENTIAL',
    ],
    [
      '403 missing scope',
      () => call('/emails/logs', { headers: { 'x-api-key': readKey } }),
      403,
      'MISSING_SCOPE',
    ],
    ['404 resource', () => call('/templates/tpl_missing', { headers: owner() }), 404, 'NOT_FOUND'],
    ['404 route', () => call('/no/such/route', { headers: owner() }), 404, 'ROUTE_NOT_FOUND'],
    [
      '413 body too large',
      () =>
        call('/templates', {
          method: 'POST',
          headers: owner(),
          body: JSON.stringify({ name: 'x', subject: 'y', html: 'z'.repeat(2 * 1024 * 1024) }),
        }),
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ] as const)('%s', async (_what, request, status, code) => {
    const { status: got, body } = await request();
    expect(got).toBe(status);
    expectContract(status, body, code);
  });

  it('409 conflict', async () => {
    const payload = JSON.stringify({ id: 'tpl_dup', name: 'Dup', subject: 's', text: 't' });
    expect((await call('/templates', { method: 'POST', headers: owner(), body: payload })).status).toBe(201);
    const { status, body } = await call('/templates', { method: 'POST', headers: owner(), body: payload });
    expect(status).toBe(409);
    expectContract(409, body, 'CONFLICT');
  });

  it('429 rate limited', async () => {
    let last = await call('/templates', { headers: { 'x-api-key': readKey } });
    for (let i = 0; i < 60 && last.status !== 429; i++)
      last = await call('/templates', { headers: { 'x-api-key': readKey } });
    expect(last.status).toBe(429);
    expectContract(429, last.body, 'RATE_LIMITED');
  });
});

describe('stores that do not answer', () => {
  let down: FastifyInstance;
  let downBase: string;

  beforeAll(async () => {
    down = await createApiApp({
      data: {
        pool: new pg.Pool({
          connectionString: 'postgres://nobody@127.0.0.1:9/none',
          connectionTimeoutMillis: 500,
        }),
        ch: createClient({
          url: 'http://127.0.0.1:9',
          request_timeout: 500,
          log: { level: ClickHouseLogLevel.OFF },
        }),
      },
      jwt: createJwtVerifier({ secret: JWT_SECRET, now: () => clock.now().getTime() }),
      policy: { now: clock.now, retentionDays: 90 },
      limits: { rateLimit: false },
    });
    await down.listen({ port: 0, host: '127.0.0.1' });
    downBase = `http://127.0.0.1:${(down.server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await down?.close();
  });

  it('503 UNAVAILABLE with Retry-After when a query cannot reach Postgres, 503 NOT_READY on /ready', async () => {
    const res = await fetch(`${downBase}/templates`, { headers: bearer(jwtFor(clock, A)) });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expectContract(503, (await res.json()) as Record<string, unknown>, 'UNAVAILABLE');
    const ready = await fetch(`${downBase}/ready`);
    expect(ready.status).toBe(503);
    expectContract(503, (await ready.json()) as Record<string, unknown>, 'NOT_READY');
  });
});
