// The statements packages/tenant-settings owns (`tenant_settings`), called directly on a Postgres
// server and on PGlite: each setting is its own column (setting one keeps the others), tracking is
// merged field by field (issue 24, item 16), the sender's cache reads many tenants in one query.
import { expect, it } from 'vitest';
import { onEveryPostgres } from '../../../test/support/owner-postgres.js';
import * as settings from '../src/index.js';

const T0 = new Date('2026-04-01T00:00:00Z');

onEveryPostgres('the tenant_settings statements', (db) => {
  it('a tenant without a row reads the defaults: null overrides, tracking on', async () => {
    expect(await settings.getRetentionOverride(db(), 'ts-none')).toBeNull();
    expect(await settings.getSendRate(db(), 'ts-none')).toBeNull();
    expect(await settings.getTracking(db(), 'ts-none')).toEqual({ opens: true, clicks: true });
    const ctx = await settings.tenantReadContext(db(), 'ts-none');
    expect(ctx.retentionOverride).toBeNull();
  });

  it('merges a partial tracking into the row: a field left out keeps its value', async () => {
    const T = 'ts-merge';
    await settings.setTracking(db(), T, { opens: false }, T0);
    expect(await settings.getTracking(db(), T)).toEqual({ opens: false, clicks: true });
    await settings.setTracking(db(), T, { clicks: false }, T0);
    expect(await settings.getTracking(db(), T)).toEqual({ opens: false, clicks: false });
    await settings.setTracking(db(), T, { opens: true }, T0);
    expect(await settings.getTracking(db(), T)).toEqual({ opens: true, clicks: false });
    // Another setting leaves tracking as it is, and tracking leaves it.
    await settings.setRetentionOverride(db(), T, 30, T0);
    await settings.setSendRate(db(), T, 7, T0);
    expect(await settings.getTracking(db(), T)).toEqual({ opens: true, clicks: false });
    await settings.setTracking(db(), T, { opens: false, clicks: true }, T0);
    expect(await settings.getRetentionOverride(db(), T)).toBe(30);
    expect(await settings.getSendRate(db(), T)).toBe(7);
    expect(await settings.getTracking(db(), T)).toEqual({ opens: false, clicks: true });
  });

  it('retention: set, cleared to the default, listed by tenant only when set', async () => {
    await settings.setRetentionOverride(db(), 'ts-ret-b', 14, T0);
    await settings.setRetentionOverride(db(), 'ts-ret-a', 90, T0);
    await settings.setRetentionOverride(db(), 'ts-ret-c', 5, T0);
    await settings.setRetentionOverride(db(), 'ts-ret-c', null, T0);
    expect(await settings.getRetentionOverride(db(), 'ts-ret-c')).toBeNull();
    expect((await settings.tenantReadContext(db(), 'ts-ret-b')).retentionOverride).toBe(14);
    const listed = (await settings.retentionOverrides(db())).filter((r) => r.tenant_id.startsWith('ts-ret-'));
    expect(listed).toEqual([
      { tenant_id: 'ts-ret-a', retention_days: 90 },
      { tenant_id: 'ts-ret-b', retention_days: 14 },
    ]);
  });

  it('the bound store: send rate and time zone set and cleared, one tenant at a time', async () => {
    const store = settings.createTenantSettingsStore(db());
    await store.setSendRate('ts-store', 25, T0);
    await store.setTimeZone('ts-store', 'Europe/Paris', T0);
    expect(await store.getSendRate('ts-store')).toBe(25);
    expect(await store.getTimeZone('ts-store')).toBe('Europe/Paris');
    expect(await store.getSendRate('ts-store-other')).toBeNull();
    expect(await store.getTimeZone('ts-store-other')).toBeNull();
    await store.setSendRate('ts-store', null, T0);
    expect(await store.getSendRate('ts-store')).toBeNull();
    expect(await store.getTimeZone('ts-store')).toBe('Europe/Paris');
    await store.setRetention('ts-store', 3, T0);
    expect(await store.getRetention('ts-store')).toBe(3);
  });

  it('the sender’s cache: the default rate for tenants without one, capped, read once per ttl', async () => {
    await settings.setSendRate(db(), 'ts-cache-a', 50, T0);
    await settings.setTracking(db(), 'ts-cache-a', { clicks: false }, T0);
    let now = 0;
    const cache = settings.createTenantSettingsCache({
      pool: db(),
      defaultRate: 10,
      maxRate: 40,
      ttlMs: 1000,
      clock: () => now,
    });
    const first = await cache.of(['ts-cache-a', 'ts-cache-b', 'ts-cache-a']);
    expect(first.get('ts-cache-a')).toEqual({ rate: 40, tracking: { opens: true, clicks: false } });
    expect(first.get('ts-cache-b')).toEqual({ rate: 10, tracking: { opens: true, clicks: true } });
    expect(first.size).toBe(2);

    await settings.setSendRate(db(), 'ts-cache-a', 20, T0);
    now = 999;
    expect((await cache.of(['ts-cache-a'])).get('ts-cache-a')?.rate).toBe(40);
    now = 1000;
    expect((await cache.of(['ts-cache-a'])).get('ts-cache-a')?.rate).toBe(20);
  });
});
