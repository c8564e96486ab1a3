import { createSecretBox } from '@tern/webhooks';
import type { FastifyInstance } from 'fastify';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_KEY_WEBHOOKS_MESSAGE } from '../../src/index.js';
import {
  bearer,
  buildApp,
  closeAll,
  createClock,
  createKey,
  createProject,
  jwtFor,
  openStores,
  type Stores,
  suffix,
  type TestClock,
} from '../support.js';

// `/webhooks*` (SPEC §17) on the real app and a real Postgres. Delivery itself is the
// dispatcher's (services/dispatcher/test).

let stores: Stores;
let clock: TestClock;
let app: FastifyInstance;
let strictApp: FastifyInstance;
const tenant = `wh-${suffix()}`;
const other = `wh-other-${suffix()}`;
let jwt: string;
let manageKey: string;
let readKey: string;
const box = createSecretBox('api-test-webhook-secrets-key');

beforeAll(async () => {
  stores = await openStores();
  clock = createClock();
  app = await buildApp(stores, clock, {
    features: { webhooks: { secretBox: box, urlPolicy: { allowPrivate: true } } },
  });
  strictApp = await buildApp(stores, clock, {
    features: {
      webhooks: {
        secretBox: box,
        urlPolicy: {
          allowPrivate: false,
          resolve: async (host) => (host === 'internal.example.com' ? ['10.0.0.7'] : ['93.184.216.34']),
        },
      },
    },
  });
  jwt = jwtFor(clock, tenant);
  manageKey = (await createKey(app, jwt, tenant, { scopes: ['webhooks:manage'] })).key;
  readKey = (await createKey(app, jwt, tenant, { scopes: ['email:read'] })).key;
});

afterAll(() => closeAll(app, strictApp, stores));

const create = (payload: unknown, token = manageKey, target = app) =>
  target.inject({ method: 'POST', url: '/webhooks', headers: bearer(token), payload: payload as object });

describe('POST /webhooks', () => {
  it('201: returns the endpoint and a whsec_ secret of ≥ 24 bytes, stored only sealed', async () => {
    const res = await create({
      url: 'http://127.0.0.1:9/hook',
      events: ['email.delivered'],
      description: 'd',
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.id).toMatch(/^wh_[A-Za-z0-9]{20,}$/);
    expect(body).toMatchObject({
      url: 'http://127.0.0.1:9/hook',
      events: ['email.delivered'],
      enabled: true,
    });
    expect(body.secret).toMatch(/^whsec_/);
    expect(Buffer.from(body.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    // A usable Standard Webhooks secret (the reference library accepts it).
    expect(() => new StandardWebhook(body.secret)).not.toThrow();
    const { rows } = await stores.pool.query('SELECT secret_enc FROM webhook_endpoints WHERE id = $1', [
      body.id,
    ]);
    expect(rows[0].secret_enc).not.toContain(body.secret.slice(6));
    expect(box.decrypt(rows[0].secret_enc)).toBe(body.secret);
  });

  it('201 for a tenant JWT of any role; events default to all (null)', async () => {
    const res = await create({ url: 'https://hooks.example.com/x' }, jwtFor(clock, tenant, 'member'));
    expect(res.statusCode).toBe(201);
    expect(res.json().events).toBeNull();
  });

  it('400: bad url, unknown event type, repeated type, unknown field — the message names the field', async () => {
    for (const [payload, field] of [
      [{ url: 'ftp://x.example.com' }, 'body.url'],
      [{ url: 'https://x.example.com', events: ['email.nope'] }, 'body.events'],
      [{ url: 'https://x.example.com', events: ['email.sent', 'email.sent'] }, 'body.events'],
      [{ url: 'https://x.example.com', extra: 1 }, 'extra'],
      [{}, 'body.url'],
    ] as const) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().message).toContain(field);
    }
  });

  it('400 without WEBHOOK_ALLOW_PRIVATE: http://, loopback literals and names resolving to private addresses', async () => {
    for (const url of ['http://hooks.example.com/', 'https://127.0.0.1/', 'https://internal.example.com/']) {
      const res = await create({ url }, manageKey, strictApp);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().message).toMatch(/^body\.url: /);
    }
    expect((await create({ url: 'https://hooks.example.com/' }, manageKey, strictApp)).statusCode).toBe(201);
  });

  it('401 without a credential, 403 for a key without webhooks:manage', async () => {
    expect(
      (await app.inject({ method: 'POST', url: '/webhooks', payload: { url: 'https://a.example' } }))
        .statusCode,
    ).toBe(401);
    const res = await create({ url: 'https://a.example' }, readKey);
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toBe('Missing required API key scope');
  });

  it('403 on every /webhooks route for a project-bound key, even with webhooks:manage (tenant-wide)', async () => {
    const projectId = await createProject(app, jwt, 'bound');
    const keyRes = await app.inject({
      method: 'POST',
      url: `/tenants/${tenant}/api-keys`,
      headers: bearer(jwt),
      payload: { name: 'bound', scopes: ['webhooks:manage'], projectId },
    });
    expect(keyRes.statusCode, keyRes.body).toBe(201);
    const bound = keyRes.json().key as string;
    const id = (await create({ url: 'https://a.example/bound' })).json().id as string;
    const calls: Array<{ method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; url: string; payload?: object }> = [
      { method: 'POST', url: '/webhooks', payload: { url: 'https://a.example/2' } },
      { method: 'GET', url: '/webhooks' },
      { method: 'GET', url: `/webhooks/${id}` },
      { method: 'PATCH', url: `/webhooks/${id}`, payload: { description: 'x' } },
      { method: 'POST', url: `/webhooks/${id}/rotate-secret` },
      { method: 'GET', url: `/webhooks/${id}/deliveries` },
      { method: 'POST', url: `/webhooks/${id}/replay`, payload: { since: '2026-01-01T00:00:00Z' } },
      { method: 'DELETE', url: `/webhooks/${id}` },
    ];
    for (const call of calls) {
      const res = await app.inject({ ...call, headers: bearer(bound) });
      expect(res.statusCode, `${call.method} ${call.url}`).toBe(403);
      expect(res.json().message).toBe(PROJECT_KEY_WEBHOOKS_MESSAGE);
    }
    // Nothing changed: the endpoint is still there, with its description.
    const still = await app.inject({ method: 'GET', url: `/webhooks/${id}`, headers: bearer(manageKey) });
    expect(still.statusCode).toBe(200);
    expect(still.json().description).toBeNull();
  });
});

describe('GET, PATCH, DELETE /webhooks/:id', () => {
  it('lists newest first with { data, meta }, never a secret; 400 on a bad limit', async () => {
    const res = await app.inject({ method: 'GET', url: '/webhooks?limit=2', headers: bearer(manageKey) });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.meta).toMatchObject({ page: 1, limit: 2 });
    expect(body.data.length).toBeLessThanOrEqual(2);
    expect(JSON.stringify(body)).not.toContain('whsec_');
    expect(
      (await app.inject({ method: 'GET', url: '/webhooks?limit=0', headers: bearer(manageKey) })).statusCode,
    ).toBe(400);
  });

  it('PATCH changes url, events, enabled; GET shows it; another tenant gets 404 everywhere', async () => {
    const id = (await create({ url: 'https://a.example/1' })).json().id as string;
    const patched = await app.inject({
      method: 'PATCH',
      url: `/webhooks/${id}`,
      headers: bearer(manageKey),
      payload: { url: 'https://a.example/2', events: ['email.bounced'], enabled: false },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      url: 'https://a.example/2',
      events: ['email.bounced'],
      enabled: false,
    });
    const got = await app.inject({ method: 'GET', url: `/webhooks/${id}`, headers: bearer(manageKey) });
    expect(got.json().enabled).toBe(false);

    const otherJwt = jwtFor(clock, other);
    for (const [method, url, payload] of [
      ['GET', `/webhooks/${id}`, undefined],
      ['PATCH', `/webhooks/${id}`, { enabled: true }],
      ['DELETE', `/webhooks/${id}`, undefined],
      ['POST', `/webhooks/${id}/rotate-secret`, undefined],
      ['GET', `/webhooks/${id}/deliveries`, undefined],
      ['POST', `/webhooks/${id}/replay`, { since: '2026-06-01T00:00:00Z' }],
    ] as const) {
      const res = await app.inject({
        method,
        url,
        headers: bearer(otherJwt),
        ...(payload ? { payload } : {}),
      });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
  });

  it('PATCH enabled: true clears the failure run and the reason Tern disabled it for', async () => {
    const id = (await create({ url: 'https://a.example/3' })).json().id as string;
    await stores.pool.query(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'every attempt failed for 5 days',
         failing_since = now() - interval '6 days' WHERE id = $1`,
      [id],
    );
    const res = await app.inject({
      method: 'PATCH',
      url: `/webhooks/${id}`,
      headers: bearer(manageKey),
      payload: { enabled: true },
    });
    expect(res.json()).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
  });

  it('PATCH 400 on an empty body or a bad type', async () => {
    const id = (await create({ url: 'https://a.example/4' })).json().id as string;
    for (const payload of [{}, { enabled: 'yes' }]) {
      const res = await app.inject({
        method: 'PATCH',
        url: `/webhooks/${id}`,
        headers: bearer(manageKey),
        payload,
      });
      expect(res.statusCode).toBe(400);
    }
  });

  it('DELETE 204, then 404', async () => {
    const id = (await create({ url: 'https://a.example/5' })).json().id as string;
    const first = await app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: bearer(manageKey) });
    expect(first.statusCode).toBe(204);
    const again = await app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: bearer(manageKey) });
    expect(again.statusCode).toBe(404);
  });
});

describe('POST /webhooks/:id/rotate-secret', () => {
  it('200 with a new secret; the old one is kept sealed for 24 h', async () => {
    const created = (await create({ url: 'https://a.example/r' })).json();
    const res = await app.inject({
      method: 'POST',
      url: `/webhooks/${created.id}/rotate-secret`,
      headers: bearer(manageKey),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().secret).toMatch(/^whsec_/);
    expect(res.json().secret).not.toBe(created.secret);
    const { rows } = await stores.pool.query(
      'SELECT secret_enc, previous_secret_enc, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1',
      [created.id],
    );
    expect(box.decrypt(rows[0].secret_enc)).toBe(res.json().secret);
    expect(box.decrypt(rows[0].previous_secret_enc)).toBe(created.secret);
    expect(rows[0].previous_secret_expires_at.getTime() - clock.now().getTime()).toBe(24 * 3_600_000);
  });
});

describe('GET /webhooks/:id/deliveries and POST /webhooks/:id/replay', () => {
  it('deliveries: 200 paged with attempts, status filter, 400 on an unknown status', async () => {
    const id = (await create({ url: 'https://a.example/d' })).json().id as string;
    const { rows } = await stores.pool.query(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, status, attempts,
         next_attempt_at, last_status_code, last_error, created_at, updated_at)
       VALUES ($1, $2, 'ev-a', 'email.sent', 'em-1', '{}', 'failed', 1, now(), 500, 'HTTP 500', now(), now()),
              ($1, $2, 'ev-b', 'email.delivered', 'em-1', '{}', 'delivered', 1, now(), 200, NULL, now(), now())
       RETURNING id`,
      [tenant, id],
    );
    await stores.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
       VALUES ($1, 1, now(), 12, 500, 'HTTP 500', 'oops')`,
      [rows[0].id],
    );
    const all = await app.inject({
      method: 'GET',
      url: `/webhooks/${id}/deliveries`,
      headers: bearer(manageKey),
    });
    expect(all.statusCode).toBe(200);
    expect(all.json().meta.total).toBe(2);
    expect(all.json().data.map((d: { webhookId: string }) => d.webhookId)).toEqual(['ev-b', 'ev-a']);
    const failed = await app.inject({
      method: 'GET',
      url: `/webhooks/${id}/deliveries?status=failed`,
      headers: bearer(manageKey),
    });
    expect(failed.json().data).toHaveLength(1);
    expect(failed.json().data[0]).toMatchObject({
      webhookId: 'ev-a',
      status: 'failed',
      lastStatusCode: 500,
      attempts: [{ attempt: 1, durationMs: 12, statusCode: 500, error: 'HTTP 500', responseExcerpt: 'oops' }],
    });
    const bad = await app.inject({
      method: 'GET',
      url: `/webhooks/${id}/deliveries?status=nope`,
      headers: bearer(manageKey),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('status');
  });

  it("a pending delivery's nextAttemptAt is its due time, or its lease's end while a dispatcher holds it", async () => {
    const id = (await create({ url: 'https://a.example/n' })).json().id as string;
    await stores.pool.query(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, status,
         next_attempt_at, lease_until, created_at, updated_at)
       VALUES ($1, $2, 'ev-due', 'email.sent', 'em-1', '{}', 'pending', '2026-06-15T10:00:00Z', NULL, now(), now()),
              ($1, $2, 'ev-held', 'email.sent', 'em-2', '{}', 'pending', '2026-06-15T10:00:00Z',
               '2026-06-15T10:00:15Z', now(), now())`,
      [tenant, id],
    );
    const res = await app.inject({
      method: 'GET',
      url: `/webhooks/${id}/deliveries`,
      headers: bearer(manageKey),
    });
    const byId = Object.fromEntries(
      res
        .json()
        .data.map((d: { webhookId: string; nextAttemptAt: string }) => [d.webhookId, d.nextAttemptAt]),
    );
    expect(byId).toEqual({ 'ev-due': '2026-06-15T10:00:00.000Z', 'ev-held': '2026-06-15T10:00:15.000Z' });
  });

  it('replay: 202 with the replay, until defaults to now; 400 on since ≥ until or a bad timestamp', async () => {
    const id = (await create({ url: 'https://a.example/p' })).json().id as string;
    const res = await app.inject({
      method: 'POST',
      url: `/webhooks/${id}/replay`,
      headers: bearer(manageKey),
      payload: { since: '2026-06-15T00:00:00Z' },
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ webhookId: id, status: 'pending', until: clock.now().toISOString() });
    expect(res.json().id).toMatch(/^rpl_/);
    for (const payload of [
      { since: '2026-06-15T00:00:00Z', until: '2026-06-14T00:00:00Z' },
      { since: 'yesterday' },
      {},
    ]) {
      const r = await app.inject({
        method: 'POST',
        url: `/webhooks/${id}/replay`,
        headers: bearer(manageKey),
        payload,
      });
      expect(r.statusCode, JSON.stringify(payload)).toBe(400);
      expect(r.json().message).toContain('since');
    }
  });

  it('replay: expired events are not delivered again — since starts at the retention cut-off, a window wholly before it is 400', async () => {
    const id = (await create({ url: 'https://a.example/r' })).json().id as string;
    const replay = (payload: object) =>
      app.inject({ method: 'POST', url: `/webhooks/${id}/replay`, headers: bearer(manageKey), payload });
    // Now is 2026-06-15T12:00Z, retention 90 days: the cut-off is 2026-03-17T00:00Z.
    const clamped = await replay({ since: '2026-01-01T00:00:00Z' });
    expect(clamped.statusCode).toBe(202);
    expect(clamped.json().since).toBe('2026-03-17T00:00:00.000Z');
    const expired = await replay({ since: '2026-01-01T00:00:00Z', until: '2026-03-17T00:00:00Z' });
    expect(expired.statusCode).toBe(400);
    expect(expired.json().message).toContain('body.until');
    expect(expired.json().message).toContain('retention cut-off (2026-03-17T00:00:00.000Z)');
  });
});
