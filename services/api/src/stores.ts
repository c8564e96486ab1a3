import { createContactStore, createUnsubscribeStore } from '@tern/bulk';
import { createLogQueries } from '@tern/read-models';
import { createEmailStore, createIdempotencyStore } from '@tern/sending';
import { createTenantSettingsStore } from '@tern/tenant-settings';
import { createWebhookStore } from '@tern/webhooks';
import type pg from 'pg';
import { RESOURCES } from './resources.generated.js';
import type { CoreStores } from './route-deps.js';

/** The repositories of the tenant resources (`RESOURCES`), each under its resource's name. */
export type ResourceStores = {
  [R in (typeof RESOURCES)[number] as R['name']]: ReturnType<R['store']>;
};

/**
 * The repositories the routes use, each its owner package's factory over the pool: a route calls
 * `deps.templates.get(…)` and never holds SQL itself. `apiRoutes` builds them (`stores` in its
 * options replaces any, for a test's fake).
 */
export type ApiStores = CoreStores & ResourceStores;

/**
 * Every repository of `ApiStores` over one pool, built once by `apiRoutes`, which hands each route
 * plugin the few it uses. `given` ones are kept as they are (a test's fake); the others are built
 * here with their owner's factory — a resource's from its `defineResource`.
 */
export function createApiStores(pool: pg.Pool, given: Partial<ApiStores> = {}): ApiStores {
  const resources = Object.fromEntries(
    RESOURCES.map((r) => [r.name, given[r.name] ?? r.store(pool)]),
  ) as ResourceStores;
  return {
    ...resources,
    webhookStore: given.webhookStore ?? createWebhookStore(pool),
    emails: given.emails ?? createEmailStore(pool),
    idempotency: given.idempotency ?? createIdempotencyStore(pool),
    unsubscribes: given.unsubscribes ?? createUnsubscribeStore(pool),
    contacts: given.contacts ?? createContactStore(pool),
    tenantSettings: given.tenantSettings ?? createTenantSettingsStore(pool),
    logQueries: given.logQueries ?? createLogQueries(pool),
  };
}
