import { bindPool, type Repository } from '@tern/kernel';
import type pg from 'pg';
import { listDeliveries } from './deliveries.js';
import {
  deleteEndpoint,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from './endpoints.js';
import { insertCursorReplay, insertReplay } from './replays.js';

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

/** The webhook resource's repository (SPEC §17): endpoints, deliveries and replays over one pool (the api's `/webhooks*` routes). */
export type WebhookStore = Repository<typeof webhookStatements>;

export function createWebhookStore(pool: pg.Pool): WebhookStore {
  return bindPool(pool, webhookStatements);
}
