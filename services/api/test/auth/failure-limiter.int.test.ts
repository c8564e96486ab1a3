// Issue 24 item 5 over real HTTP: refused credentials from one address are limited without
// locking that address out — valid JWTs and keys of other tenants, the tracking pixel, click and
// unsubscribe links from it are still served — and TRUST_PROXY makes the limit count the client
// behind a reverse proxy, not the proxy.
import type { AddressInfo } from 'node:net';
import { signTrackingToken } from '@tern/auth';
import { createUnsubscribeToken } from '@tern/domain';
import { createEventStream, createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AppOverrides,
  buildApp,
  createKey,
  jwtFor,
  openStores,
  type Stores,
  suffix,
  TRACKING_SECRET,
  testTenants,
} from '../support.js';

const { clock, A, B } = testTenants('flim');
const MAX = 5;
let stores: Stores;
let log: PostgresEventLog;
const apps: FastifyInstance[] = [];

/** The app listening on a loopback port: every request below goes over a real socket. */
async function serve(overrides: AppOverrides): Promise<string> {
  const app = await buildApp(
    stores,
    clock,
    {
      limits: { rateLimit: { max: MAX, timeWindowMs: 60_000 } },
      features: { sending: { log: createEventStream(log) } },
    },
    overrides,
  );
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

const randomKey = () => `tern_${suffix()}${suffix()}${suffix()}${suffix()}`;
const logs = (base: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/emails/logs`, { headers });
/** Refused credentials until the address is over its budget; returns the statuses. */
async function exhaust(base: string, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i <= MAX; i++)
    statuses.push((await logs(base, { 'x-api-key': randomKey(), ...headers })).status);
  return statuses;
}

beforeAll(async () => {
  stores = await openStores();
  log = createPostgresEventLog({ pool: stores.pool, pollIntervalMs: 50 });
  await log.ensureSchema();
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await log?.close();
  await stores?.close();
});

describe('an address over its refused-credential budget (no proxy)', () => {
  let base: string;
  let keyA: string;
  beforeAll(async () => {
    base = await serve({});
    keyA = (await createKey(apps[0]!, jwtFor(clock, A), A, { scopes: ['email:read'] })).key;
  });

  it('refuses guesses with 429, yet serves valid credentials, the pixel, click and unsubscribe links', async () => {
    expect(await exhaust(base)).toEqual([401, 401, 401, 401, 401, 429]);
    const guess = await logs(base, { 'x-api-key': randomKey() });
    expect(guess.status).toBe(429);
    expect(Number(guess.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await guess.json()) as { code: string }).code).toBe('RATE_LIMITED');
    // Nothing presented: refused at once.
    expect((await logs(base)).status).toBe(429);
    // A bad JWT is a refusal too.
    expect((await logs(base, { authorization: 'Bearer not.a.jwt' })).status).toBe(429);

    // Valid credentials of other tenants from the same address.
    expect((await logs(base, { authorization: `Bearer ${jwtFor(clock, B)}` })).status).toBe(200);
    expect((await logs(base, { 'x-api-key': keyA })).status).toBe(200);

    // Public links from the same address.
    const emailId = `em_${suffix()}`;
    const pixel = await fetch(
      `${base}/t/o/${signTrackingToken(TRACKING_SECRET, { kind: 'open', tenantId: A, emailId })}`,
    );
    expect(pixel.status).toBe(200);
    expect(pixel.headers.get('content-type')).toBe('image/gif');
    const click = await fetch(
      `${base}/t/c/${signTrackingToken(TRACKING_SECRET, { kind: 'click', tenantId: A, emailId, url: 'https://a.example/x' })}`,
      { redirect: 'manual' },
    );
    expect(click.status).toBe(302);
    const token = createUnsubscribeToken(TRACKING_SECRET, {
      tenantId: A,
      email: 'ada@example.com',
      source: 'manual',
    });
    const page = await fetch(`${base}/u/${token}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);

    // Still limited for guesses, and X-Forwarded-For is not believed without TRUST_PROXY.
    expect((await logs(base, { 'x-api-key': randomKey(), 'x-forwarded-for': '203.0.113.9' })).status).toBe(
      429,
    );
  });
});

describe('TRUST_PROXY: behind a reverse proxy each client has its own budget', () => {
  it('one client locked out does not lock out the others behind the same proxy', async () => {
    const base = await serve({ http: { trustProxy: ['127.0.0.1'] } });
    const attacker = { 'x-forwarded-for': '203.0.113.7' };
    expect(await exhaust(base, attacker)).toEqual([401, 401, 401, 401, 401, 429]);
    expect((await logs(base, { 'x-api-key': randomKey(), ...attacker })).status).toBe(429);
    // Another client behind the same proxy (same socket peer) is not over any budget.
    expect((await logs(base, { 'x-api-key': randomKey(), 'x-forwarded-for': '203.0.113.8' })).status).toBe(
      401,
    );
    // A proxy that appends the peer to what the client sent: the hop the proxy saw decides.
    expect(
      (await logs(base, { 'x-api-key': randomKey(), 'x-forwarded-for': '203.0.113.7, 203.0.113.10' })).status,
    ).toBe(401);
  });

  it('a number of hops trusts that many proxies', async () => {
    const base = await serve({ http: { trustProxy: 1 } });
    expect(await exhaust(base, { 'x-forwarded-for': '198.51.100.1' })).toEqual([
      401, 401, 401, 401, 401, 429,
    ]);
    expect((await logs(base, { 'x-api-key': randomKey(), 'x-forwarded-for': '198.51.100.2' })).status).toBe(
      401,
    );
  });
});
