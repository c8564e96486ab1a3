import { Writable } from 'node:stream';
import { hashApiKey } from '@tern/auth';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  buildApp,
  closeAll,
  createClock,
  createKey,
  JWT_SECRET,
  jwtFor,
  NOW,
  openApp,
  rawJwt,
  type Stores,
  suffix,
} from '../support.js';

// SPEC §3: how a request proves who it is, on a route that takes both kinds of credential
// (`GET /emails/logs`) and on dashboard-only routes.

const clock = createClock(NOW);
const run = suffix();
const A = `cred-a-${run}`;

let stores: Stores;
let app: FastifyInstance;
let ownerA: string;
let keyA: string;

const logs = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/emails/logs', headers });
const exp = () => Math.floor(clock.now().getTime() / 1000) + 600;

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  ownerA = jwtFor(clock, A);
  keyA = (await createKey(app, ownerA, A, { scopes: ['email:read'] })).key;
});

afterAll(() => closeAll(app, stores));

describe('dashboard JWT', () => {
  it('is accepted when signed with the secret, unexpired and with a tenantId (role defaults to member)', async () => {
    const token = rawJwt({ alg: 'HS256', typ: 'JWT' }, { tenantId: A, exp: exp() }, JWT_SECRET);
    expect((await logs(bearer(token))).statusCode).toBe(200);
    // Default role member: not enough for key management.
    expect((await app.inject({ url: `/tenants/${A}/api-keys`, headers: bearer(token) })).statusCode).toBe(
      403,
    );
  });

  it.each([
    ['alg none', () => rawJwt({ alg: 'none', typ: 'JWT' }, { tenantId: A, role: 'owner', exp: exp() })],
    [
      'a bad signature',
      () => rawJwt({ alg: 'HS256' }, { tenantId: A, role: 'owner', exp: exp() }, 'not-the-secret'),
    ],
    [
      'a tampered payload',
      () => {
        const [h, , s] = jwtFor(clock, A).split('.');
        const forged = Buffer.from(
          JSON.stringify({ tenantId: 'someone-else', role: 'owner', exp: exp() }),
        ).toString('base64url');
        return `${h}.${forged}.${s}`;
      },
    ],
    ['expired', () => jwtFor(clock, A, 'owner', -1)],
    [
      'expiring right now',
      () =>
        rawJwt({ alg: 'HS256' }, { tenantId: A, exp: Math.floor(clock.now().getTime() / 1000) }, JWT_SECRET),
    ],
    ['no exp', () => rawJwt({ alg: 'HS256' }, { tenantId: A, role: 'owner' }, JWT_SECRET)],
    ['no tenantId', () => rawJwt({ alg: 'HS256' }, { role: 'owner', exp: exp() }, JWT_SECRET)],
    ['an invalid tenantId', () => rawJwt({ alg: 'HS256' }, { tenantId: 'a b', exp: exp() }, JWT_SECRET)],
    [
      'an unknown role',
      () => rawJwt({ alg: 'HS256' }, { tenantId: A, role: 'root', exp: exp() }, JWT_SECRET),
    ],
    ['HS512', () => rawJwt({ alg: 'HS512' }, { tenantId: A, exp: exp() }, JWT_SECRET)],
  ])('is refused with 401 when it has %s', async (_what, token) => {
    for (const url of ['/emails/logs', '/analytics/summary', `/tenants/${A}/api-keys`]) {
      const res = await app.inject({ url, headers: bearer(token()) });
      expect(res.statusCode, url).toBe(401);
      expect(res.json()).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
    }
  });
});

describe('API key', () => {
  it('works in Authorization: Bearer and in X-API-Key, scheme case-insensitive', async () => {
    for (const headers of [bearer(keyA), { authorization: `bearer ${keyA}` }, { 'x-api-key': keyA }]) {
      expect((await logs(headers)).statusCode).toBe(200);
    }
  });

  it('is refused with one message whether unknown, a near miss, or not a key at all', async () => {
    const messages = new Set<string>();
    for (const headers of [
      { 'x-api-key': `${keyA.slice(0, -1)}${keyA.endsWith('A') ? 'B' : 'A'}` },
      { 'x-api-key': `tern_${'x'.repeat(40)}` },
      { 'x-api-key': 'tern_' },
      { 'x-api-key': hashApiKey(keyA) },
      { 'x-api-key': ownerA },
      bearer(`tern_${'y'.repeat(40)}`),
    ]) {
      const res = await logs(headers);
      expect(res.statusCode).toBe(401);
      messages.add(res.json().message);
    }
    expect([...messages]).toEqual(['Invalid API key']);
  });

  it('is refused when two different credentials are sent', async () => {
    expect((await logs({ ...bearer(ownerA), 'x-api-key': keyA })).statusCode).toBe(401);
    expect((await logs({ ...bearer(keyA), 'x-api-key': keyA })).statusCode).toBe(200);
  });

  it('a malformed Authorization header is 401', async () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b', keyA]) {
      expect((await logs({ authorization })).statusCode, authorization).toBe(401);
    }
  });
});

describe('logs of the service', () => {
  it('never contain a key or a JWT: credential headers are redacted', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const logged = await buildApp(stores, clock, { http: { logger: { level: 'trace', stream } } });
    try {
      const created = await logged.inject({
        method: 'POST',
        url: `/tenants/${A}/api-keys`,
        headers: bearer(ownerA),
        payload: { name: 'logged', scopes: ['email:read'] },
      });
      const { key, id } = created.json();
      await logged.inject({ url: '/emails/logs', headers: bearer(key) });
      await logged.inject({ url: '/emails/logs', headers: { 'x-api-key': key } });
      await logged.inject({ url: '/analytics/summary', headers: bearer(key) });
      await logged.inject({ method: 'DELETE', url: `/tenants/${A}/api-keys/${id}`, headers: bearer(ownerA) });
      await logged.inject({ url: '/emails/logs', headers: { 'x-api-key': key } });
      const bad = rawJwt({ alg: 'HS256' }, { tenantId: A, exp: exp() }, 'wrong');
      await logged.inject({ url: '/emails/logs', headers: bearer(bad) });

      const text = lines.join('\n');
      // One line per request (issue 45 item 5), each with the request's headers.
      expect(lines.filter((l) => l.includes('"request completed"'))).toHaveLength(7);
      // The headers were logged, and censored.
      expect(text).toContain('[REDACTED]');
      expect(text).toContain('user-agent');
      for (const secret of [
        key,
        key.slice(12),
        ownerA,
        ownerA.split('.')[2]!,
        bad,
        hashApiKey(key),
        JWT_SECRET,
      ]) {
        expect(text).not.toContain(secret);
      }
      // Who called is logged, by id.
      expect(text).toContain(id);
    } finally {
      await logged.close();
    }
  });
});
