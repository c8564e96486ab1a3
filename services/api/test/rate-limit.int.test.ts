import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  buildApp,
  createClock,
  createKey,
  jwtFor,
  openStores,
  type Stores,
  suffix,
} from './support.js';

// SPEC §4: 429 rate limited with Retry-After. Counted per credential, so one noisy key does not
// starve another.
const clock = createClock();
const tenant = `rl-${suffix()}`;
let stores: Stores;
let app: FastifyInstance;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  stores = await openStores();
  app = await buildApp(stores, clock, { rateLimit: { max: 5, timeWindowMs: 60_000 } });
  const owner = jwtFor(clock, tenant);
  keyA = (await createKey(app, owner, tenant, { scopes: ['email:read'] })).key;
  keyB = (await createKey(app, owner, tenant, { scopes: ['email:read'] })).key;
});

afterAll(async () => {
  await app?.close();
  await stores?.close();
});

const logs = (headers: Record<string, string>) => app.inject({ url: '/emails/logs', headers });

describe('429', () => {
  it('refuses a credential past its limit with Retry-After and the SPEC §4 body, and counts keys apart', async () => {
    for (let i = 0; i < 5; i++) expect((await logs({ 'x-api-key': keyA })).statusCode).toBe(200);
    const limited = await logs({ 'x-api-key': keyA });
    expect(limited.statusCode).toBe(429);
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
