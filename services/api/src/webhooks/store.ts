import { bindPool, type PoolBound } from '@tern/jobs';
import {
  deleteEndpoint,
  getEndpoint,
  insertEndpoint,
  insertReplay,
  listDeliveries,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from '@tern/webhooks';
import type pg from 'pg';

/**
 * The webhook resource's repository (SPEC §17). Its SQL is `packages/webhooks`' (the owner of the
 * webhook tables, which the dispatcher calls too); these are the same functions.
 */
export {
  deleteEndpoint,
  type EndpointPatch,
  getEndpoint,
  insertEndpoint,
  insertReplay,
  listDeliveries,
  listEndpoints,
  type NewEndpoint,
  rotateSecret,
  updateEndpoint,
} from '@tern/webhooks';

/** The webhooks repository: the functions above over one pool (`ApiStores.webhookStore`). */
export interface WebhookStore {
  insertEndpoint: PoolBound<typeof insertEndpoint>;
  getEndpoint: PoolBound<typeof getEndpoint>;
  listEndpoints: PoolBound<typeof listEndpoints>;
  updateEndpoint: PoolBound<typeof updateEndpoint>;
  deleteEndpoint: PoolBound<typeof deleteEndpoint>;
  rotateSecret: PoolBound<typeof rotateSecret>;
  listDeliveries: PoolBound<typeof listDeliveries>;
  insertReplay: PoolBound<typeof insertReplay>;
}

export function createWebhookStore(pool: pg.Pool): WebhookStore {
  return bindPool(pool, {
    insertEndpoint,
    getEndpoint,
    listEndpoints,
    updateEndpoint,
    deleteEndpoint,
    rotateSecret,
    listDeliveries,
    insertReplay,
  });
}
