// client.analytics.* against the real query service on a loopback port (SPEC §26).
import { beforeAll, describe, expect, it } from 'vitest';
import { generateHistory } from '../../../services/api/test/datasets.js';
import { createClock, createKey, jwtFor, NOW, project, suffix } from '../../../services/api/test/support.js';
import { init, TernApiError } from '../src/index.js';
import { useLoopbackApi } from './support.js';

const clock = createClock(NOW);
const tenantId = `sdk-analytics-${suffix()}`;
const api = useLoopbackApi(clock);

beforeAll(async () => {
  await project(api.stores, generateHistory(tenantId, NOW, 60, 3));
});

describe('client.analytics', () => {
  it('breakdown and deliverability answer what the routes answer; a key without the scope gets a 403', async () => {
    const jwt = jwtFor(clock, tenantId);
    const { key } = await createKey(api.app, jwt, tenantId, { scopes: ['analytics:read'] });
    const client = init({ apiKey: key, baseUrl: api.baseUrl });
    const breakdown = await client.analytics.breakdown({ by: 'template', days: 30, interval: 'day' });
    const direct = await api.app.inject({
      method: 'GET',
      url: '/analytics/breakdown?by=template&days=30&interval=day',
      headers: { authorization: `Bearer ${jwt}` },
    });
    expect(breakdown).toEqual(direct.json());
    expect(breakdown.data.reduce((n, r) => n + r.total, 0)).toBe(60);
    const deliverability = await client.analytics.deliverability({ days: 30 });
    expect(deliverability.providers.reduce((n, p) => n + p.total, 0)).toBe(60);

    const other = await createKey(api.app, jwt, tenantId, { scopes: ['email:read'] });
    await expect(
      init({ apiKey: other.key, baseUrl: api.baseUrl }).analytics.breakdown({ by: 'tag' }),
    ).rejects.toBeInstanceOf(TernApiError);
  });
});
