import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  closeAll,
  createClock,
  createKey,
  jwtFor,
  openApp,
  type Stores,
  suffix,
} from '../support.js';

// SPEC §4: 429 rate limited with Retry-After. Counted per credential, so one noisy key does not
// starve another.
const clock = createClock();
const tenant = `rl-${suffix()}`;
let stores: Stores;
let app: FastifyInstance;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  ({ stores, app } = await openApp(clock, { limits: { rateLimit: { max: 5, timeWindowMs: 60_000 } } }));
  const owner = jwtFor(clock, tenant);
  keyA = (await createKey(app, owner, tenant, { scopes: ['email:read'] })).key;
  keyB = (await createKey(app, owner, tenant, { scopes: ['email:read'] })).key;
});

afterAll(() => closeAll(app, stores));

const logs = (headers: Record<string, string>) => app.inject({ url: '/emails/logs', headers });

describe('429', () => {
  it('refuses a credential past its limit with Retry-After and the SPEC §4 body, and counts keys apart', async () => {
    for (let i = 0; i < 5; i++) {
      const ok = await logs({ 'x-api-key': keyA });
      expect(ok.statusCode).toBe(200);
      // The limiter's headers (@fastify/rate-limit): the limit, what is left, when the window resets.
      expect(ok.headers).toMatchObject({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': String(4 - i) });
      expect(Number(ok.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
    }
    const limited = await logs({ 'x-api-key': keyA });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers).toMatchObject({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0' });
    expect(limited.headers['x-ratelimit-reset']).toBe(limited.headers['retry-after']);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.json()).toMatchObject({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      message: expect.stringContaining('Rate limit exceeded'),
    });
    // Another key of the same tenant has its own budget.
    expect((await logs(bearer(keyB))).statusCode).toBe(200);
  });

  it('never puts the credential in the rate-limit headers or body', async () => {
    for (let i = 0; i < 6; i++) await logs(bearer(keyB));
    const limited = await logs(bearer(keyB));
    expect(limited.statusCode).toBe(429);
    expect(JSON.stringify(limited.headers) + limited.body).not.toContain(keyB);
  });
});

describe('counted before authentication (issue 9, item 3)', () => {
  const from = (remoteAddress: string, headers: Record<string, string> = {}) =>
    app.inject({ url: '/emails/logs', headers, remoteAddress });
  const randomKey = () => `tern_${suffix()}${suffix()}${suffix()}${suffix()}`;

  it('random keys from one address get 429 after the limit, not 401 forever', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++)
      statuses.push((await from('10.0.0.1', { 'x-api-key': randomKey() })).statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    const limited = await from('10.0.0.1', { 'x-api-key': randomKey() });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.json().message).toBe('Rate limit exceeded: at most 5 requests per minute; retry later');
    // Another address is not affected.
    expect((await from('10.0.0.2', { 'x-api-key': randomKey() })).statusCode).toBe(401);
  });

  it('requests without any credential get 429 after the limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await from('10.0.0.3')).statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  });

  it('one key counts once whatever header or spelling carries it', async () => {
    const owner = jwtFor(clock, tenant);
    const { key } = await createKey(app, owner, tenant, { scopes: ['email:read'] });
    const spellings: Record<string, string>[] = [
      { 'x-api-key': key },
      { authorization: `Bearer ${key}` },
      { authorization: `bearer ${key}` },
      { authorization: `BEARER   ${key}  ` },
      { 'x-api-key': `  ${key} ` },
    ];
    for (const headers of spellings) expect((await from('10.0.0.4', headers)).statusCode).toBe(200);
    expect((await from('10.0.0.5', { authorization: `Bearer  ${key}` })).statusCode).toBe(429);
  });
});
