// Issue 40 item 11: a limit on sending domains per tenant (100 adds cost 19 s of key generation),
// and two tenants adding the same domain in one month must get different DKIM selectors — over a
// real socket, on the real app and Postgres.
import type { Domain } from '@tern/contracts';
import { createEventStream, createPostgresEventLog } from '@tern/event-log';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../../test/support/dns-server.js';
import { testDomains } from '../domains-support.js';
import { wallClock } from '../sending-support.js';
import { buildApp, closeAll, jwtFor, openStores, type Stores, suffix } from '../support.js';

const MAX = 3;
let stores: Stores;
let dns: TestDnsServer;
let app: FastifyInstance;
let base: string;
const run = suffix();

beforeAll(async () => {
  stores = await openStores();
  dns = await startTestDnsServer();
  const log = createPostgresEventLog({ pool: stores.pool, pollIntervalMs: 20 });
  await log.ensureSchema();
  const domains = testDomains(stores.pool, createEventStream(log), dns, undefined, undefined, MAX);
  app = await buildApp(stores, wallClock, {
    limits: { rateLimit: false },
    features: { domains: { domains } },
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(() => closeAll(app, dns, stores));

const add = async (tenant: string, name: string) => {
  const res = await fetch(`${base}/domains`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${jwtFor(wallClock, tenant)}` },
    body: JSON.stringify({ name }),
  });
  return { status: res.status, body: (await res.json()) as Domain & { code?: string; message?: string } };
};
const count = async (tenant: string) =>
  Number(
    (await stores.pool.query('SELECT count(*) AS n FROM sending_domains WHERE tenant_id = $1', [tenant]))
      .rows[0].n,
  );

describe('sending domains: per-tenant limit and DKIM selectors', () => {
  it('two tenants adding the same domain in one month get different DKIM selectors', async () => {
    const name = `shared-${run}.example.test`;
    const a = await add(`dlim-a-${run}`, name);
    const b = await add(`dlim-b-${run}`, name);
    expect([a.status, b.status]).toEqual([201, 201]);
    const dkim = (d: Domain) => d.records.find((r) => r.purpose === 'dkim')!.name;
    expect(dkim(a.body)).toMatch(/^tern\d{6}-[0-9a-f]{8}\._domainkey\./);
    expect(dkim(a.body)).not.toBe(dkim(b.body));
    const { rows } = await stores.pool.query<{ selector: string }>(
      'SELECT selector FROM sending_domains WHERE name = $1',
      [name],
    );
    expect(new Set(rows.map((r) => r.selector)).size).toBe(2);
  });

  it(`the ${MAX + 1}th domain of a tenant → 409 DOMAIN_LIMIT_REACHED; concurrent adds never pass the limit`, async () => {
    const tenant = `dlim-c-${run}`;
    for (let i = 0; i < MAX; i++) expect((await add(tenant, `d${i}-${run}.example.test`)).status).toBe(201);
    const over = await add(tenant, `over-${run}.example.test`);
    expect(over.status).toBe(409);
    expect(over.body.code).toBe('DOMAIN_LIMIT_REACHED');
    // The same name is still named as taken first.
    expect((await add(tenant, `d0-${run}.example.test`)).body.code).toBe('DOMAIN_EXISTS');
    expect(await count(tenant)).toBe(MAX);
    // Eight at once into a fresh tenant: exactly MAX created, the others refused.
    const racing = `dlim-r-${run}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => add(racing, `r${i}-${run}.example.test`)),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(MAX);
    expect(answers.filter((a) => a.status === 409).every((a) => a.body.code === 'DOMAIN_LIMIT_REACHED')).toBe(
      true,
    );
    expect(await count(racing)).toBe(MAX);
  });
});
