import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { hashApiKey, signTrackingToken } from '@tern/auth';
import { SCOPES } from '@tern/contracts';
import { createUnsubscribeToken } from '@tern/domain';
import { createEventStream, createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import {
  type AppOverrides,
  bearer,
  buildApp,
  closeAll,
  createClock,
  createKey,
  DEFAULT_RETENTION_DAYS,
  JWT_SECRET,
  jwtFor,
  NOW,
  openApp,
  openStores,
  rawJwt,
  type Stores,
  suffix,
  TRACKING_SECRET,
  testTenants,
} from '../support.js';

describe('API keys', () => {
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
        expect(
          (await post(A, { name: 'k', scopes: ['email:read'] }, bearer(memberA))).json().message,
        ).toMatch(/owner or admin/);
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
});

describe('credentials', () => {
  // SPEC §3: how a request proves who it is, on a route that takes both kinds of credential
  // (`GET /emails/logs`) and on dashboard-only routes.

  const clock = createClock(NOW);
  const run = suffix();
  const A = `cred-a-${run}`;

  let stores: Stores;
  let app: FastifyInstance;
  let ownerA: string;
  let keyA: string;

  const logs = (headers: Record<string, string>) =>
    app.inject({ method: 'GET', url: '/emails/logs', headers });
  const exp = () => Math.floor(clock.now().getTime() / 1000) + 600;

  beforeAll(async () => {
    ({ stores, app } = await openApp(clock));
    ownerA = jwtFor(clock, A);
    keyA = (await createKey(app, ownerA, A, { scopes: ['email:read'] })).key;
  });

  afterAll(() => closeAll(app, stores));

  describe('dashboard JWT', () => {
    it('is accepted when signed with the secret, unexpired and with a tenantId (role defaults to member)', async () => {
      const token = rawJwt({ alg: 'HS256', typ: 'JWT' }, { tenantId: A, exp: exp() }, JWT_SECRET);
      expect((await logs(bearer(token))).statusCode).toBe(200);
      // Default role member: not enough for key management.
      expect((await app.inject({ url: `/tenants/${A}/api-keys`, headers: bearer(token) })).statusCode).toBe(
        403,
      );
    });

    it.each([
      ['alg none', () => rawJwt({ alg: 'none', typ: 'JWT' }, { tenantId: A, role: 'owner', exp: exp() })],
      [
        'a bad signature',
        () => rawJwt({ alg: 'HS256' }, { tenantId: A, role: 'owner', exp: exp() }, 'not-the-secret'),
      ],
      [
        'a tampered payload',
        () => {
          const [h, , s] = jwtFor(clock, A).split('.');
          const forged = Buffer.from(
            JSON.stringify({ tenantId: 'someone-else', role: 'owner', exp: exp() }),
          ).toString('base64url');
          return `${h}.${forged}.${s}`;
        },
      ],
      ['expired', () => jwtFor(clock, A, 'owner', -1)],
      [
        'expiring right now',
        () =>
          rawJwt(
            { alg: 'HS256' },
            { tenantId: A, exp: Math.floor(clock.now().getTime() / 1000) },
            JWT_SECRET,
          ),
      ],
      ['no exp', () => rawJwt({ alg: 'HS256' }, { tenantId: A, role: 'owner' }, JWT_SECRET)],
      ['no tenantId', () => rawJwt({ alg: 'HS256' }, { role: 'owner', exp: exp() }, JWT_SECRET)],
      ['an invalid tenantId', () => rawJwt({ alg: 'HS256' }, { tenantId: 'a b', exp: exp() }, JWT_SECRET)],
      [
        'an unknown role',
        () => rawJwt({ alg: 'HS256' }, { tenantId: A, role: 'root', exp: exp() }, JWT_SECRET),
      ],
      ['HS512', () => rawJwt({ alg: 'HS512' }, { tenantId: A, exp: exp() }, JWT_SECRET)],
    ])('is refused with 401 when it has %s', async (_what, token) => {
      for (const url of ['/emails/logs', '/analytics/summary', `/tenants/${A}/api-keys`]) {
        const res = await app.inject({ url, headers: bearer(token()) });
        expect(res.statusCode, url).toBe(401);
        expect(res.json()).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
      }
    });
  });

  describe('API key', () => {
    it('works in Authorization: Bearer and in X-API-Key, scheme case-insensitive', async () => {
      for (const headers of [bearer(keyA), { authorization: `bearer ${keyA}` }, { 'x-api-key': keyA }]) {
        expect((await logs(headers)).statusCode).toBe(200);
      }
    });

    it('is refused with one message whether unknown, a near miss, or not a key at all', async () => {
      const messages = new Set<string>();
      for (const headers of [
        { 'x-api-key': `${keyA.slice(0, -1)}${keyA.endsWith('A') ? 'B' : 'A'}` },
        { 'x-api-key': `tern_${'x'.repeat(40)}` },
        { 'x-api-key': 'tern_' },
        { 'x-api-key': hashApiKey(keyA) },
        { 'x-api-key': ownerA },
        bearer(`tern_${'y'.repeat(40)}`),
      ]) {
        const res = await logs(headers);
        expect(res.statusCode).toBe(401);
        messages.add(res.json().message);
      }
      expect([...messages]).toEqual(['Invalid API key']);
    });

    it('is refused when two different credentials are sent', async () => {
      expect((await logs({ ...bearer(ownerA), 'x-api-key': keyA })).statusCode).toBe(401);
      expect((await logs({ ...bearer(keyA), 'x-api-key': keyA })).statusCode).toBe(200);
    });

    it('a malformed Authorization header is 401', async () => {
      for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b', keyA]) {
        expect((await logs({ authorization })).statusCode, authorization).toBe(401);
      }
    });
  });

  describe('logs of the service', () => {
    it('never contain a key or a JWT: credential headers are redacted', async () => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(...chunk.toString().split('\n').filter(Boolean));
          done();
        },
      });
      const logged = await buildApp(stores, clock, { http: { logger: { level: 'trace', stream } } });
      try {
        const created = await logged.inject({
          method: 'POST',
          url: `/tenants/${A}/api-keys`,
          headers: bearer(ownerA),
          payload: { name: 'logged', scopes: ['email:read'] },
        });
        const { key, id } = created.json();
        await logged.inject({ url: '/emails/logs', headers: bearer(key) });
        await logged.inject({ url: '/emails/logs', headers: { 'x-api-key': key } });
        await logged.inject({ url: '/analytics/summary', headers: bearer(key) });
        await logged.inject({
          method: 'DELETE',
          url: `/tenants/${A}/api-keys/${id}`,
          headers: bearer(ownerA),
        });
        await logged.inject({ url: '/emails/logs', headers: { 'x-api-key': key } });
        const bad = rawJwt({ alg: 'HS256' }, { tenantId: A, exp: exp() }, 'wrong');
        await logged.inject({ url: '/emails/logs', headers: bearer(bad) });

        const text = lines.join('\n');
        // One line per request (issue 45 item 5), each with the request's headers.
        expect(lines.filter((l) => l.includes('"request completed"'))).toHaveLength(7);
        // The headers were logged, and censored.
        expect(text).toContain('[REDACTED]');
        expect(text).toContain('user-agent');
        for (const secret of [
          key,
          key.slice(12),
          ownerA,
          ownerA.split('.')[2]!,
          bad,
          hashApiKey(key),
          JWT_SECRET,
        ]) {
          expect(text).not.toContain(secret);
        }
        // Who called is logged, by id.
        expect(text).toContain(id);
      } finally {
        await logged.close();
      }
    });
  });
});

// Issue 24 item 5 over real HTTP: refused credentials from one address are limited without
// locking that address out — valid JWTs and keys of other tenants, the tracking pixel, click and
// unsubscribe links from it are still served — and TRUST_PROXY makes the limit count the client
// behind a reverse proxy, not the proxy.
describe('the failed-credential limiter', () => {
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
        (await logs(base, { 'x-api-key': randomKey(), 'x-forwarded-for': '203.0.113.7, 203.0.113.10' }))
          .status,
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
});

describe('the rate limit', () => {
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
        expect(ok.headers).toMatchObject({
          'x-ratelimit-limit': '5',
          'x-ratelimit-remaining': String(4 - i),
        });
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
});
