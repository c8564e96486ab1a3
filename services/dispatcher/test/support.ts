// Fixtures of the dispatcher tests: a fresh migrated Postgres database, endpoints written through
// the API's own store, events appended to a real log and projected by the projector's own sink.
import { randomBytes } from 'node:crypto';
import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import { createEventStream, type EventLog } from '@tern/event-log';
import { applyBatchToPostgres } from '@tern/projector';
import { migratePostgres } from '@tern/stores';
import * as webhookStore from '@tern/webhooks';
import { generateWebhookSecret, type SecretBox } from '@tern/webhooks';
import pg from 'pg';
import { createFreshDatabase } from '../../../test/support/services.js';

export const suffix = () => randomBytes(4).toString('hex');

export async function openDatabase(): Promise<{ pool: pg.Pool; url: string; close(): Promise<void> }> {
  const db = await createFreshDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 8 });
  pool.on('error', () => undefined);
  await migratePostgres(pool);
  return {
    pool,
    url: db.url,
    async close() {
      await pool.end();
      await db.drop();
    },
  };
}

/** Creates an endpoint the way `POST /webhooks` does; returns its id and clear secret. */
export async function createEndpoint(
  pool: pg.Pool,
  box: SecretBox,
  tenantId: string,
  url: string,
  events: string[] | null = null,
): Promise<{ id: string; secret: string }> {
  const secret = generateWebhookSecret();
  const id = `wh_${suffix()}${suffix()}${suffix()}`;
  await webhookStore.insertEndpoint(
    pool,
    tenantId,
    { id, url, events, description: null, secretEnc: box.encrypt(secret) },
    new Date(),
  );
  return { id, secret };
}

let counter = 0;

/** Events of one email, occurring now (ids unique in the run). */
export function emailEvents(
  tenantId: string,
  emailId: string,
  types: Array<{ type: string; data?: Record<string, unknown>; occurredAt?: string }>,
): DeliveryEvent[] {
  return types.map((t) =>
    deliveryEventSchema.parse({
      id: `ev-${++counter}-${suffix()}`,
      tenantId,
      emailId,
      occurredAt: t.occurredAt ?? new Date().toISOString(),
      type: t.type,
      ...(t.data ? { data: t.data } : {}),
    }),
  );
}

export const queued = (to = 'user@example.com', subject = 'Hello', tags = ['welcome']) => ({
  type: 'email.queued',
  data: { toEmail: to, subject, tags },
});

/** Appends like ingest does (key = emailId), then projects like the projector's Postgres sink. */
export async function publish(log: EventLog, pool: pg.Pool, events: readonly DeliveryEvent[]): Promise<void> {
  await createEventStream(log).append(events);
  await applyBatchToPostgres(pool, events, [], () => `b-${suffix()}`);
}
