// Set-up shared by the SDK's integration tests: the real query service (createApiApp on a fresh
// Postgres database) or the real sending pipeline, listening on a loopback port for a client.
import { type BulkMailer, outgoingMailer } from '@tern/worker';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import {
  openSendingWorld,
  type SendingWorld,
  wallClock,
} from '../../../services/api/test/sending-support.js';
import {
  type AppOverrides,
  buildApp,
  createKey,
  jwtFor,
  openStores,
  project,
  type Stores,
  type TestClock,
  TRACKING_SECRET,
} from '../../../services/api/test/support.js';

/** Listens on a loopback port and returns the base URL a client is given (127.0.0.1, never localhost). */
export async function listenOnLoopback(app: FastifyInstance): Promise<string> {
  return (await app.listen({ host: '127.0.0.1', port: 0 })).replace('localhost', '127.0.0.1');
}

export interface LoopbackApi {
  stores: Stores;
  app: FastifyInstance;
  baseUrl: string;
}

/** Fresh stores, the api app over them (`buildApp` with `overrides`), listening on a loopback port. */
export async function openLoopbackApi(clock: TestClock, ...overrides: AppOverrides[]): Promise<LoopbackApi> {
  const stores = await openStores();
  try {
    const app = await buildApp(stores, clock, ...overrides);
    return { stores, app, baseUrl: await listenOnLoopback(app) };
  } catch (err) {
    await stores.close();
    throw err;
  }
}

/** Closes what `openLoopbackApi` opened, as far as it got. */
export async function closeLoopbackApi(api: Partial<LoopbackApi>): Promise<void> {
  await api.app?.close();
  await api.stores?.close();
}

/**
 * The API of a test file: opened before its tests (`openLoopbackApi`) and closed after them. Its
 * fields are there from the file's own `beforeAll` on (hooks run in the order they are declared).
 */
export function useLoopbackApi(clock: TestClock, ...overrides: AppOverrides[]): LoopbackApi {
  const api = {} as LoopbackApi;
  beforeAll(async () => {
    Object.assign(api, await openLoopbackApi(clock, ...overrides));
  });
  afterAll(() => closeLoopbackApi(api));
  return api;
}

/** The sending world on a loopback port, with an API key of `scopes` for `tenant` (minted through the API). */
export async function openSendingWorldWithKey(
  tenant: string,
  scopes: string[],
): Promise<{ world: SendingWorld; baseUrl: string; key: string }> {
  const world = await openSendingWorld();
  try {
    const baseUrl = await listenOnLoopback(world.app);
    const owner = jwtFor(wallClock, tenant);
    const { key } = await createKey(world.app, owner, tenant, { scopes });
    return { world, baseUrl, key };
  } catch (err) {
    await world.close();
    throw err;
  }
}

/**
 * The options of a bulk job of services/worker (fan-out, scheduler, automation runner) over `stores`:
 * its mail goes the real send path, the events folded straight into the stores.
 */
export function workerOptions(stores: Stores, clock: TestClock) {
  const mailer: BulkMailer = {
    enqueue: (tenantId, mails, at) =>
      outgoingMailer(stores.pool, { append: (events) => project(stores, events) }).enqueue(
        tenantId,
        mails,
        at,
      ),
  };
  return {
    pool: stores.pool,
    mailer,
    now: clock.now,
    publicUrl: 'http://127.0.0.1:3000',
    trackingSecret: TRACKING_SECRET,
  };
}
