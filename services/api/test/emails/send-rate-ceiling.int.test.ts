// Issue 40 item 9: an owner set `sendRatePerSecond` to 1 000 000 with a production default of 100.
// The operator's ceiling (SEND_RATE_MAX_PER_SECOND, default the server's rate) bounds what a
// tenant may set, over a real socket, and the sender's view of a rate stored before the ceiling.
import { createTenantSettingsCache } from '@tern/tenant-settings';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wallClock } from '../sending-support.js';
import { closeAll, jwtFor, openApp, type Stores, suffix } from '../support.js';

let stores: Stores;
let app: FastifyInstance;
let base: string;
const run = suffix();

beforeAll(async () => {
  ({ stores, app } = await openApp(wallClock, {
    limits: { rateLimit: false, sendRatePerSecond: 100, sendRateMaxPerSecond: 100 },
  }));
  base = await app.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(() => closeAll(app, stores));

const put = async (tenant: string, body: unknown) => {
  const res = await fetch(`${base}/tenants/${tenant}/settings`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${jwtFor(wallClock, tenant)}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('the operator’s ceiling on sendRatePerSecond', () => {
  it('above the ceiling → 400 naming it, nothing changed; at or below → 200; null → the server default', async () => {
    const tenant = `rate-cap-${run}`;
    const high = await put(tenant, { sendRatePerSecond: 1_000_000, retentionDays: 5 });
    expect(high.status).toBe(400);
    expect(high.body.code).toBe('FST_ERR_VALIDATION');
    expect(String(high.body.message)).toMatch(/at most 100/);
    const { rows } = await stores.pool.query('SELECT 1 FROM tenant_settings WHERE tenant_id = $1', [tenant]);
    expect(rows).toHaveLength(0);
    expect((await put(tenant, { sendRatePerSecond: 101 })).status).toBe(400);
    expect((await put(tenant, { sendRatePerSecond: 100 })).body).toMatchObject({ sendRatePerSecond: 100 });
    expect((await put(tenant, { sendRatePerSecond: 7 })).body).toMatchObject({ sendRatePerSecond: 7 });
    expect((await put(tenant, { sendRatePerSecond: null })).body).toMatchObject({
      sendRatePerSecond: null,
      defaultSendRatePerSecond: 100,
    });
  });

  it('the sender applies a rate stored above the ceiling (before it existed) at the ceiling', async () => {
    const tenant = `rate-old-${run}`;
    await stores.pool.query(
      `INSERT INTO tenant_settings (tenant_id, send_rate_per_second, updated_at) VALUES ($1, 1000000, now())`,
      [tenant],
    );
    const capped = createTenantSettingsCache({ pool: stores.pool, defaultRate: 100, maxRate: 100 });
    expect((await capped.of([tenant])).get(tenant)?.rate).toBe(100);
    // No ceiling named (0): unlimited development default, the stored rate as it is.
    const open = createTenantSettingsCache({ pool: stores.pool, defaultRate: 0, maxRate: 0 });
    expect((await open.of([tenant])).get(tenant)?.rate).toBe(1_000_000);
    // An unlimited default under a ceiling is the ceiling.
    const unlimited = createTenantSettingsCache({ pool: stores.pool, defaultRate: 0, maxRate: 50 });
    expect((await unlimited.of([`rate-none-${run}`])).get(`rate-none-${run}`)?.rate).toBe(50);
  });
});
