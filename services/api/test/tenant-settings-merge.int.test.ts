import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, closeAll, jwtFor, openApp, type Stores, testTenants } from './support.js';

/**
 * Issue 24, item 16: `PUT /tenants/:id/settings {"tracking":{"opens":false}}` answered 400 although
 * docs/sending.md says either field may be sent alone. A partial `tracking` is merged into the
 * tenant's current settings.
 */
const { clock, A } = testTenants('settings-merge');
let stores: Stores;
let app: FastifyInstance;
let admin: string;

const put = (payload: unknown) =>
  app.inject({
    method: 'PUT',
    url: `/tenants/${A}/settings`,
    headers: bearer(admin),
    payload: payload as object,
  });
const tracking = async () =>
  (await app.inject({ url: `/tenants/${A}/settings`, headers: bearer(admin) })).json().tracking;

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  admin = jwtFor(clock, A, 'admin');
});
afterAll(() => closeAll(app, stores));

describe('PUT /tenants/:id/settings merges a partial tracking', () => {
  it('either field alone changes only that field', async () => {
    expect(await tracking()).toEqual({ opens: true, clicks: true });
    const opensOff = await put({ tracking: { opens: false } });
    expect(opensOff.statusCode, opensOff.body).toBe(200);
    expect(opensOff.json().tracking).toEqual({ opens: false, clicks: true });
    const clicksOff = await put({ tracking: { clicks: false } });
    expect(clicksOff.statusCode, clicksOff.body).toBe(200);
    expect(clicksOff.json().tracking).toEqual({ opens: false, clicks: false });
    expect((await put({ tracking: { opens: true } })).json().tracking).toEqual({
      opens: true,
      clicks: false,
    });
    // Another field leaves tracking as it is.
    expect((await put({ retentionDays: 30 })).json().tracking).toEqual({ opens: true, clicks: false });
    expect(await tracking()).toEqual({ opens: true, clicks: false });
  });

  it('still refuses an empty, mistyped or unknown tracking field (400)', async () => {
    for (const payload of [
      { tracking: {} },
      { tracking: { opens: 'yes' } },
      { tracking: { opens: true, pixels: false } },
      { tracking: null },
    ]) {
      const res = await put(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe('FST_ERR_VALIDATION');
    }
    expect(await tracking()).toEqual({ opens: true, clicks: false });
  });
});
