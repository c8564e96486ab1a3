import { hashApiKey } from '@tern/auth';
import { SCOPES } from '@tern/contracts';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import {
  bearer,
  buildApp,
  closeAll,
  createKey,
  DEFAULT_RETENTION_DAYS,
  jwtFor,
  NOW,
  openApp,
  type Stores,
  testTenants,
} from '../support.js';

const { clock, run, A, B } = testTenants('keys');

let stores: Stores;
let app: FastifyInstance;
let ownerA: string;
let adminA: string;
let memberA: string;
let ownerB: string;

const keysUrl = (tenant: string) => `/tenants/${tenant}/api-keys`;
type Headers = Record<string, string>;
const post = (tenant: string, payload: unknown, headers: Headers = bearer(ownerA)) =>
  app.inject({ method: 'POST', url: keysUrl(tenant), headers, payload: payload as object });
const list = (tenant: string, headers: Headers = bearer(ownerA)) =>
  app.inject({ method: 'GET', url: keysUrl(tenant), headers });
const revoke = (tenant: string, keyId: string, headers: Headers = bearer(ownerA), on = app) =>
  on.inject({ method: 'DELETE', url: `${keysUrl(tenant)}/${keyId}`, headers });
const readLogs = (key: string, on = app) =>
  on.inject({ method: 'GET', url: '/emails/logs', headers: { 'x-api-key': key } });

beforeAll(async () => {
  ({ stores, app } = await openApp(clock));
  ownerA = jwtFor(clock, A, 'owner');
  adminA = jwtFor(clock, A, 'admin');
  memberA = jwtFor(clock, A, 'member');
  ownerB = jwtFor(clock, B, 'owner');
});

afterAll(() => closeAll(app, stores));

describe('POST /tenants/:id/api-keys', () => {
  describe('201', () => {
    it('returns the clear key once and stores only its hash and prefix', async () => {
      const res = await post(A, { name: 'Production', scopes: ['email:read', 'email:send'] });
      expect(res.statusCode, res.body).toBe(201);
      const body = res.json();
      expect(body).toEqual({
        id: expect.stringMatching(/^key_[0-9a-f]{24}$/),
        name: 'Production',
        scopes: ['email:read', 'email:send'],
        key: expect.stringMatching(/^tern_[A-Za-z0-9]{32,}$/),
        createdAt: NOW,
        expiresAt: null,
        projectId: null,
      });
      const { rows } = await stores.pool.query('SELECT * FROM api_keys WHERE id = $1', [body.id]);
      expect(rows).toHaveLength(1);
      expect(rows[0].key_hash).toBe(hashApiKey(body.key));
      expect(rows[0].prefix).toBe(body.key.slice(0, 12));
      expect(JSON.stringify(rows[0])).not.toContain(body.key);
      expect((await readLogs(body.key)).statusCode).toBe(200);
    });

    it('for an admin, with every scope and an expiry', async () => {
      const expiresAt = '2026-07-01T00:00:00+02:00';
      const res = await post(A, { name: 'x'.repeat(100), scopes: [...SCOPES], expiresAt }, bearer(adminA));
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toMatchObject({ scopes: [...SCOPES], expiresAt: '2026-06-30T22:00:00.000Z' });
    });
  });

  describe('400', () => {
    it.each([
      [{ scopes: ['email:read'] }, 'name'],
      [{ name: '', scopes: ['email:read'] }, 'name'],
      [{ name: 'x'.repeat(101), scopes: ['email:read'] }, 'name'],
      [{ name: 7, scopes: ['email:read'] }, 'name'],
      [{ name: 'k' }, 'scopes'],
      [{ name: 'k', scopes: [] }, 'scopes'],
      [{ name: 'k', scopes: ['email:read', 'email:read'] }, 'scopes'],
      [{ name: 'k', scopes: ['email:*'] }, 'scopes'],
      [{ name: 'k', scopes: 'email:read' }, 'scopes'],
      [{ name: 'k', scopes: ['email:read'], expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ name: 'k', scopes: ['email:read'], expiresAt: '2026-06-15T11:59:59Z' }, 'expiresAt'],
      [{ name: 'k', scopes: ['email:read'], expiresAt: NOW }, 'expiresAt'],
      [{ name: 'k', scopes: ['email:read'], owner: 'me' }, 'owner'],
    ])('%j names %s', async (payload, field) => {
      const res = await post(A, payload);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(res.json().message).toContain(field);
    });

    it('for a body that is not JSON', async () => {
      const res = await app.inject({
        method: 'POST',
        url: keysUrl(A),
        headers: { ...bearer(ownerA), 'content-type': 'application/json' },
        payload: '{"name":',
      });
      expect(res.statusCode).toBe(400);
    });
  });

  describe('401', () => {
    it('without a credential, or with an expired JWT', async () => {
      expect((await post(A, { name: 'k', scopes: ['email:read'] }, {})).statusCode).toBe(401);
      const expired = jwtFor(clock, A, 'owner', -10);
      expect((await post(A, { name: 'k', scopes: ['email:read'] }, bearer(expired))).statusCode).toBe(401);
    });
  });

  describe('403', () => {
    it('for a member, another tenant’s owner, or an API key', async () => {
      const key = (await createKey(app, ownerA, A, { scopes: [...SCOPES] })).key;
      for (const headers of [bearer(memberA), bearer(ownerB), bearer(key), { 'x-api-key': key }]) {
        const res = await post(A, { name: 'k', scopes: ['email:read'] }, headers);
        expect(res.statusCode).toBe(403);
        expect(res.json()).toMatchObject({ statusCode: 403, error: 'Forbidden' });
      }
      expect((await post(A, { name: 'k', scopes: ['email:read'] }, bearer(memberA))).json().message).toMatch(
        /owner or admin/,
      );
      expect((await post(A, { name: 'k', scopes: ['email:read'] }, bearer(key))).json().message).toMatch(
        /dashboard session/,
      );
    });
  });
});

describe('GET /tenants/:id/api-keys', () => {
  describe('200', () => {
    it('lists metadata only, newest first, revoked keys included', async () => {
      const tenant = `keys-list-${run}`;
      const owner = jwtFor(clock, tenant);
      const first = await createKey(app, owner, tenant, { name: 'first', scopes: ['email:read'] });
      clock.advance(1000);
      const second = await createKey(app, owner, tenant, {
        name: 'second',
        scopes: ['email:send'],
        expiresAt: '2027-01-01T00:00:00.000Z',
      });
      clock.advance(1000);
      expect((await revoke(tenant, first.id, bearer(owner))).statusCode).toBe(204);
      clock.set(NOW);

      const res = await list(tenant, bearer(owner));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        data: [
          {
            id: second.id,
            name: 'second',
            scopes: ['email:send'],
            prefix: second.key.slice(0, 12),
            createdAt: '2026-06-15T12:00:01.000Z',
            lastUsedAt: null,
            expiresAt: '2027-01-01T00:00:00.000Z',
            revokedAt: null,
            projectId: null,
          },
          {
            id: first.id,
            name: 'first',
            scopes: ['email:read'],
            prefix: first.key.slice(0, 12),
            createdAt: NOW,
            lastUsedAt: null,
            expiresAt: null,
            revokedAt: '2026-06-15T12:00:02.000Z',
            projectId: null,
          },
        ],
      });
      expect(res.body).not.toContain(first.key);
      expect(res.body).not.toContain(hashApiKey(first.key));
    });

    it('is empty for a tenant without keys', async () => {
      const tenant = `keys-none-${run}`;
      expect((await list(tenant, bearer(jwtFor(clock, tenant, 'admin')))).json()).toEqual({ data: [] });
    });
  });

  describe('401', () => {
    it('without a credential', async () => {
      expect((await list(A, {})).statusCode).toBe(401);
    });
  });

  describe('403', () => {
    it('for a member, another tenant, or an API key', async () => {
      const key = (await createKey(app, ownerA, A, { scopes: ['email:read'] })).key;
      for (const headers of [bearer(memberA), bearer(ownerB), { 'x-api-key': key }]) {
        expect((await list(A, headers)).statusCode).toBe(403);
      }
    });
  });
});

describe('DELETE /tenants/:id/api-keys/:keyId', () => {
  describe('204', () => {
    it('revokes: the key gets 401 at once on this instance, twice is still 204', async () => {
      const { id, key } = await createKey(app, ownerA, A, { scopes: ['email:read'] });
      expect((await readLogs(key)).statusCode).toBe(200);
      const res = await revoke(A, id);
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      const refused = await readLogs(key);
      expect(refused.statusCode).toBe(401);
      // Same message as a key that never existed: a revoked key reveals nothing.
      const unknown = await readLogs(`tern_${'Z'.repeat(40)}`);
      expect(refused.json()).toEqual(unknown.json());
      const { rows } = await stores.pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [id]);
      clock.advance(60_000);
      try {
        expect((await revoke(A, id, bearer(jwtFor(clock, A, 'admin')))).statusCode).toBe(204);
      } finally {
        clock.set(NOW);
      }
      const again = await stores.pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [id]);
      expect(again.rows[0].revoked_at).toEqual(rows[0].revoked_at);
    });

    it('reaches every instance within 5 s (a second app on its own pool)', async () => {
      const pool2 = new pg.Pool({ connectionString: stores.databaseUrl, max: 2 });
      // The run's teardown drops databases WITH (FORCE): an idle client it kills is no test failure.
      pool2.on('error', () => undefined);
      const app2 = await buildApp({ pool: pool2, ch: stores.ch }, clock);
      try {
        const { id, key } = await createKey(app, ownerA, A, { scopes: ['email:read'] });
        expect((await readLogs(key, app)).statusCode).toBe(200);
        expect((await readLogs(key, app2)).statusCode).toBe(200);
        const revokedAt = Date.now();
        expect((await revoke(A, id)).statusCode).toBe(204);
        expect((await readLogs(key, app)).statusCode).toBe(401);
        await waitFor(async () => (await readLogs(key, app2)).statusCode === 401, {
          timeoutMs: 5000,
          intervalMs: 100,
          description: 'the other instance to refuse the revoked key',
        });
        expect(Date.now() - revokedAt).toBeLessThan(5000);
        // Revoked on the second instance: refused there at once too.
        const other = await createKey(app2, ownerA, A, { scopes: ['email:read'] });
        expect((await readLogs(other.key, app2)).statusCode).toBe(200);
        expect((await revoke(A, other.id, bearer(ownerA), app2)).statusCode).toBe(204);
        expect((await readLogs(other.key, app2)).statusCode).toBe(401);
      } finally {
        await app2.close();
        await pool2.end();
      }
    });
  });

  describe('401', () => {
    it('without a credential', async () => {
      expect((await revoke(A, 'key_x', {})).statusCode).toBe(401);
    });
  });

  describe('403', () => {
    it('for a member, another tenant’s owner (even on its own key id), or an API key', async () => {
      const { id, key } = await createKey(app, ownerA, A, { scopes: ['email:read'] });
      for (const headers of [bearer(memberA), bearer(ownerB), bearer(key)]) {
        expect((await revoke(A, id, headers)).statusCode).toBe(403);
      }
      expect((await readLogs(key)).statusCode).toBe(200);
    });
  });

  describe('404', () => {
    it('for an unknown key, and for another tenant’s key through this tenant', async () => {
      const unknown = await revoke(A, 'key_000000000000000000000000');
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
      const ofB = await createKey(app, ownerB, B, { scopes: ['email:read'] });
      expect((await revoke(A, ofB.id)).statusCode).toBe(404);
      expect((await readLogs(ofB.key)).statusCode).toBe(200);
    });
  });
});

describe('API key lifecycle', () => {
  it('honours expiresAt with the same 401 as an unknown key', async () => {
    const { key } = await createKey(app, ownerA, A, {
      scopes: ['email:read'],
      expiresAt: '2026-06-15T13:00:00.000Z',
    });
    try {
      clock.set('2026-06-15T12:59:59.999Z');
      expect((await readLogs(key)).statusCode).toBe(200);
      clock.set('2026-06-15T13:00:00.000Z');
      const expired = await readLogs(key);
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toEqual((await readLogs(`tern_${'Q'.repeat(40)}`)).json());
    } finally {
      clock.set(NOW);
    }
  });

  it('records lastUsedAt in batches, without a write per request', async () => {
    const flushing = await buildApp(stores, clock, { limits: { lastUsedFlushMs: 100 } });
    try {
      const { id, key } = await createKey(flushing, ownerA, A, { scopes: ['email:read'] });
      clock.set('2026-06-15T12:30:00.000Z');
      for (let i = 0; i < 5; i++) expect((await readLogs(key, flushing)).statusCode).toBe(200);
      const listed = await waitFor(async () => {
        const keys = (await list(A)).json().data as { id: string; lastUsedAt: string | null }[];
        return keys.find((k) => k.id === id && k.lastUsedAt !== null);
      });
      expect(listed.lastUsedAt).toBe('2026-06-15T12:30:00.000Z');
    } finally {
      clock.set(NOW);
      await flushing.close();
    }
  });

  it('flushes lastUsedAt on close', async () => {
    const closing = await buildApp(stores, clock, { limits: { lastUsedFlushMs: 3_600_000 } });
    const { id, key } = await createKey(closing, ownerA, A, { scopes: ['email:read'] });
    clock.set('2026-06-15T12:45:00.000Z');
    try {
      expect((await readLogs(key, closing)).statusCode).toBe(200);
      const before = await stores.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [id]);
      expect(before.rows[0].last_used_at).toBeNull();
      await closing.close();
      const after = await stores.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [id]);
      expect(after.rows[0].last_used_at.toISOString()).toBe('2026-06-15T12:45:00.000Z');
    } finally {
      clock.set(NOW);
    }
  });
});

describe('GET /tenants/:id/settings', () => {
  describe('200', () => {
    it('is null until set, then the override', async () => {
      const tenant = `settings-${run}`;
      const owner = bearer(jwtFor(clock, tenant));
      expect((await app.inject({ url: `/tenants/${tenant}/settings`, headers: owner })).json()).toEqual({
        retentionDays: null,
        defaultRetentionDays: DEFAULT_RETENTION_DAYS,
        tracking: { opens: true, clicks: true },
        sendRatePerSecond: null,
        defaultSendRatePerSecond: 0,
        timeZone: null,
      });
      await app.inject({
        method: 'PUT',
        url: `/tenants/${tenant}/settings`,
        headers: owner,
        payload: { retentionDays: 7 },
      });
      expect((await app.inject({ url: `/tenants/${tenant}/settings`, headers: owner })).json()).toEqual({
        retentionDays: 7,
        defaultRetentionDays: DEFAULT_RETENTION_DAYS,
        tracking: { opens: true, clicks: true },
        sendRatePerSecond: null,
        defaultSendRatePerSecond: 0,
        timeZone: null,
      });
    });

    it('a member reads them too (only owners and admins change them)', async () => {
      const tenant = `settings-member-${run}`;
      await app.inject({
        method: 'PUT',
        url: `/tenants/${tenant}/settings`,
        headers: bearer(jwtFor(clock, tenant)),
        payload: { retentionDays: 12 },
      });
      const res = await app.inject({
        url: `/tenants/${tenant}/settings`,
        headers: bearer(jwtFor(clock, tenant, 'member')),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ retentionDays: 12, defaultRetentionDays: DEFAULT_RETENTION_DAYS });
    });
  });

  describe('401', () => {
    it('without a credential', async () => {
      expect((await app.inject({ url: `/tenants/${A}/settings` })).statusCode).toBe(401);
    });
  });

  describe('403', () => {
    it('for another tenant or an API key', async () => {
      const key = (await createKey(app, ownerA, A, { scopes: [...SCOPES] })).key;
      for (const headers of [bearer(ownerB), { 'x-api-key': key }]) {
        expect((await app.inject({ url: `/tenants/${A}/settings`, headers })).statusCode).toBe(403);
      }
    });
  });
});

describe('PUT /tenants/:id/settings', () => {
  const put = (tenant: string, payload: unknown, headers: Headers = bearer(ownerA)) =>
    app.inject({ method: 'PUT', url: `/tenants/${tenant}/settings`, headers, payload: payload as object });

  describe('200', () => {
    it('sets and clears the retention override', async () => {
      const tenant = `settings-put-${run}`;
      const admin = bearer(jwtFor(clock, tenant, 'admin'));
      for (const retentionDays of [1, 3650, null]) {
        const res = await put(tenant, { retentionDays }, admin);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toEqual({
          retentionDays,
          defaultRetentionDays: DEFAULT_RETENTION_DAYS,
          tracking: { opens: true, clicks: true },
          sendRatePerSecond: null,
          defaultSendRatePerSecond: 0,
          timeZone: null,
        });
        const { rows } = await stores.pool.query(
          'SELECT retention_days FROM tenant_settings WHERE tenant_id = $1',
          [tenant],
        );
        expect(rows[0].retention_days).toBe(retentionDays);
      }
    });

    it('sets and clears the send rate (SPEC §23), keeping the other settings', async () => {
      const tenant = `settings-rate-${run}`;
      const admin = bearer(jwtFor(clock, tenant, 'admin'));
      expect((await put(tenant, { retentionDays: 9 }, admin)).statusCode).toBe(200);
      const set = await put(tenant, { sendRatePerSecond: 20 }, admin);
      expect(set.statusCode, set.body).toBe(200);
      expect(set.json()).toMatchObject({
        retentionDays: 9,
        sendRatePerSecond: 20,
        defaultSendRatePerSecond: 0,
        timeZone: null,
      });
      const { rows } = await stores.pool.query(
        'SELECT send_rate_per_second FROM tenant_settings WHERE tenant_id = $1',
        [tenant],
      );
      expect(rows[0].send_rate_per_second).toBe(20);
      const cleared = await put(tenant, { sendRatePerSecond: null }, admin);
      expect(cleared.json()).toMatchObject({ retentionDays: 9, sendRatePerSecond: null });
    });
  });

  describe('400', () => {
    it.each([{ sendRatePerSecond: 0 }, { sendRatePerSecond: 2.5 }, { sendRatePerSecond: '10' }])(
      '%j',
      async (payload) => {
        const res = await put(A, payload);
        expect(res.statusCode).toBe(400);
        expect(res.json().message).toMatch(/sendRatePerSecond must be an integer/);
      },
    );

    it.each([
      { retentionDays: 0 },
      { retentionDays: 3651 },
      { retentionDays: 1.5 },
      { retentionDays: '30' },
      {},
      { retentionDays: 30, x: 1 },
    ])('%j', async (payload) => {
      const res = await put(A, payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/retentionDays|x/);
    });
  });

  describe('401', () => {
    it('without a credential', async () => {
      expect((await put(A, { retentionDays: 5 }, {})).statusCode).toBe(401);
    });
  });

  describe('403', () => {
    it('for a member, another tenant or an API key', async () => {
      const key = (await createKey(app, ownerA, A, { scopes: [...SCOPES] })).key;
      for (const headers of [bearer(memberA), bearer(ownerB), bearer(key)]) {
        expect((await put(A, { retentionDays: 5 }, headers)).statusCode).toBe(403);
      }
      const { rows } = await stores.pool.query(
        'SELECT retention_days FROM tenant_settings WHERE tenant_id = $1',
        [A],
      );
      expect(rows[0]?.retention_days ?? null).toBeNull();
    });
  });
});

describe('bad input is a 400, never a 500 or 414 (issue 9, item 5)', () => {
  it('refuses a key name with U+0000, another control character or a lone surrogate', async () => {
    for (const name of ['a\u0000b', 'tab\there', 'bad \ud800']) {
      const res = await post(A, { name, scopes: ['email:read'] });
      expect(res.statusCode, JSON.stringify(name)).toBe(400);
      expect(res.json().message).toContain('name must not contain control characters or invalid Unicode');
    }
  });

  it('serves a 128-character tenant id (SPEC §5) on /tenants/:id/api-keys', async () => {
    const long = `t${'x'.repeat(127)}`;
    expect(long).toHaveLength(128);
    const owner = jwtFor(clock, long, 'owner');
    const created = await post(long, { name: 'long tenant', scopes: ['email:read'] }, bearer(owner));
    expect(created.statusCode, created.body).toBe(201);
    const listed = await list(long, bearer(owner));
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.map((k: { name: string }) => k.name)).toEqual(['long tenant']);
  });
});
