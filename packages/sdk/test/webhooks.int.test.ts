// `client.webhooks.*` against the real query service (createApiApp on a real Postgres database
// and embedded chDB) listening on loopback, with a key minted through the API.
import { createSecretBox } from '@tern/webhooks';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClock, createKey, jwtFor, type Stores, suffix } from '../../../services/api/test/support.js';
import { init, TernApiError, type TernClient } from '../src/index.js';
import { closeLoopbackApi, openLoopbackApi } from './support.js';

let stores: Stores;
let app: FastifyInstance;
let client: TernClient;
let readOnly: TernClient;
const tenant = `sdk-wh-${suffix()}`;

beforeAll(async () => {
  const clock = createClock(new Date().toISOString());
  let baseUrl: string;
  ({ stores, app, baseUrl } = await openLoopbackApi(clock, {
    features: {
      webhooks: {
        secretBox: createSecretBox('sdk-test-webhook-secrets-key'),
        urlPolicy: { allowPrivate: true },
      },
    },
  }));
  const jwt = jwtFor(clock, tenant);
  client = init({
    apiKey: (await createKey(app, jwt, tenant, { scopes: ['webhooks:manage'] })).key,
    baseUrl,
  });
  readOnly = init({
    apiKey: (await createKey(app, jwt, tenant, { scopes: ['email:read'] })).key,
    baseUrl,
    maxRetries: 0,
  });
});

afterAll(() => closeLoopbackApi({ stores, app }));

describe('client.webhooks', () => {
  it('create, get, list, update, rotateSecret, deliveries, replay and remove', async () => {
    const created = await client.webhooks.create({
      url: 'https://hooks.example.com/a',
      events: ['email.delivered'],
    });
    expect(created.secret).toMatch(/^whsec_/);
    expect(await client.webhooks.get(created.id)).toMatchObject({
      id: created.id,
      events: ['email.delivered'],
    });

    const list = await client.webhooks.list({ limit: 10 });
    expect(list.data.map((w) => w.id)).toContain(created.id);
    expect(list.meta).toMatchObject({ page: 1, limit: 10 });

    const updated = await client.webhooks.update(created.id, { enabled: false, events: null });
    expect(updated).toMatchObject({ enabled: false, events: null });

    const rotated = await client.webhooks.rotateSecret(created.id);
    expect(rotated.secret).not.toBe(created.secret);

    expect(await client.webhooks.deliveries(created.id, { status: 'failed' })).toEqual({
      data: [],
      meta: { page: 1, limit: 20, total: 0, totalPages: 0 },
    });

    const replay = await client.webhooks.replay(created.id, { since: new Date(Date.now() - 3_600_000) });
    expect(replay).toMatchObject({ webhookId: created.id, status: 'pending' });
    // From a cursor of `client.events.list` (SPEC §25): this tenant has no events, so '0' is its head.
    const fromCursor = await client.webhooks.replay(created.id, { after: '0' });
    expect(fromCursor).toMatchObject({
      webhookId: created.id,
      since: null,
      after: '0',
      through: '0',
      hasMore: false,
    });
    const ahead = await client.webhooks.replay(created.id, { after: '5' }).catch((e: unknown) => e);
    expect((ahead as TernApiError).status).toBe(400);
    expect((ahead as TernApiError).message).toContain('body.after');

    await expect(client.webhooks.remove(created.id)).resolves.toBeUndefined();
    const gone = await client.webhooks.get(created.id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(TernApiError);
    expect((gone as TernApiError).status).toBe(404);
  });

  it('server refusals become typed errors: 400 names the field, 403 for a key without the scope', async () => {
    const bad = await client.webhooks.create({ url: 'ftp://nope.example.com' }).catch((e: unknown) => e);
    expect((bad as TernApiError).status).toBe(400);
    expect((bad as TernApiError).message).toContain('body.url');
    const denied = await readOnly.webhooks.list().catch((e: unknown) => e);
    expect((denied as TernApiError).isMissingScope).toBe(true);
  });
});
