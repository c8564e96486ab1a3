import { bindPool, type Repository } from '@tern/jobs';
import {
  deleteEndpoint,
  getEndpoint,
  insertCursorReplay,
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
  insertCursorReplay,
  insertEndpoint,
  insertReplay,
  listDeliveries,
  listEndpoints,
  type NewEndpoint,
  rotateSecret,
  updateEndpoint,
} from '@tern/webhooks';

const webhookStatements = {
  insertEndpoint,
  getEndpoint,
  listEndpoints,
  updateEndpoint,
  deleteEndpoint,
  rotateSecret,
  listDeliveries,
  insertReplay,
  insertCursorReplay,
};

/** The webhooks repository: the functions above over one pool (`ApiStores.webhookStore`). */
export type WebhookStore = Repository<typeof webhookStatements>;

export function createWebhookStore(pool: pg.Pool): WebhookStore {
  return bindPool(pool, webhookStatements);
}
