// client.analytics.* against the real query service on a loopback port (SPEC §26).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHistory } from '../../../services/api/test/breakdown-support.js';
import {
  createClock,
  createKey,
  jwtFor,
  NOW,
  project,
  type Stores,
  suffix,
} from '../../../services/api/test/support.js';
import { init, TernApiError } from '../src/index.js';
import { closeLoopbackApi, openLoopbackApi } from './support.js';

const clock = createClock(NOW);
const tenantId = `sdk-analytics-${suffix()}`;
let stores: Stores;
let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  ({ stores, app, baseUrl } = await openLoopbackApi(clock));
  await project(stores, generateHistory(tenantId, NOW, 60, 3));
});

afterAll(() => closeLoopbackApi({ stores, app }));

describe('client.analytics', () => {
  it('breakdown and deliverability answer what the routes answer; a key without the scope gets a 403', async () => {
    const jwt = jwtFor(clock, tenantId);
    const { key } = await createKey(app, jwt, tenantId, { scopes: ['analytics:read'] });
    const client = init({ apiKey: key, baseUrl });
    const breakdown = await client.analytics.breakdown({ by: 'template', days: 30, interval: 'day' });
    const direct = await app.inject({
      method: 'GET',
      url: '/analytics/breakdown?by=template&days=30&interval=day',
      headers: { authorization: `Bearer ${jwt}` },
    });
    expect(breakdown).toEqual(direct.json());
    expect(breakdown.data.reduce((n, r) => n + r.total, 0)).toBe(60);
    const deliverability = await client.analytics.deliverability({ days: 30 });
    expect(deliverability.providers.reduce((n, p) => n + p.total, 0)).toBe(60);

    const other = await createKey(app, jwt, tenantId, { scopes: ['email:read'] });
    await expect(
      init({ apiKey: other.key, baseUrl }).analytics.breakdown({ by: 'tag' }),
    ).rejects.toBeInstanceOf(TernApiError);
  });
});
