import type {
  Webhook,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEventType,
  WebhookReplay,
} from '@tern/contracts';
import { withTransaction } from '@tern/jobs';
import type pg from 'pg';
import type { PoolBound } from '../stores.js';

/** SQL of the webhook resource (SPEC §17). Plain functions: a pool or client, the tenant, no HTTP. */

type Queryable = Pick<pg.Pool, 'query'>;

interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  event_types: string[] | null;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

const ENDPOINT_COLUMNS =
  'id, url, description, event_types, enabled, disabled_reason, failing_since, created_at, updated_at';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

function toWebhook(r: EndpointRow): Webhook {
  return {
    id: r.id,
    url: r.url,
    events: r.event_types as WebhookEventType[] | null,
    description: r.description,
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    failingSince: iso(r.failing_since),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export interface NewEndpoint {
  id: string;
  url: string;
  events: readonly string[] | null;
  description: string | null;
  secretEnc: string;
}

export async function insertEndpoint(db: Queryable, tenantId: string, e: NewEndpoint, now: Date) {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (tenant_id, id, url, description, event_types, secret_enc, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     RETURNING ${ENDPOINT_COLUMNS}`,
    [tenantId, e.id, e.url, e.description, e.events, e.secretEnc, now],
  );
  return toWebhook(rows[0]!);
}

export async function getEndpoint(db: Queryable, tenantId: string, id: string): Promise<Webhook | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

export async function listEndpoints(
  db: Queryable,
  tenantId: string,
  window: { limit: number; offset: string },
): Promise<{ data: Webhook[]; total: number }> {
  const [page, count] = await Promise.all([
    db.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1
       ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2 OFFSET $3::bigint`,
      [tenantId, window.limit, window.offset],
    ),
    db.query<{ n: string }>('SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = $1', [tenantId]),
  ]);
  return { data: page.rows.map(toWebhook), total: Number(count.rows[0]?.n ?? 0) };
}

export interface EndpointPatch {
  url?: string | undefined;
  events?: readonly string[] | null | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

/** Applies a PATCH; enabling clears the failure run and the reason, so the endpoint starts fresh. */
export async function updateEndpoint(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: EndpointPatch,
  now: Date,
): Promise<Webhook | null> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       url = CASE WHEN $3::boolean THEN $4 ELSE url END,
       event_types = CASE WHEN $5::boolean THEN $6::text[] ELSE event_types END,
       description = CASE WHEN $7::boolean THEN $8 ELSE description END,
       enabled = COALESCE($9::boolean, enabled),
       disabled_reason = CASE WHEN $9::boolean IS NULL THEN disabled_reason ELSE NULL END,
       failing_since = CASE WHEN $9::boolean THEN NULL ELSE failing_since END,
       updated_at = $10
     WHERE tenant_id = $1 AND id = $2
     RETURNING ${ENDPOINT_COLUMNS}`,
    [
      tenantId,
      id,
      patch.url !== undefined,
      patch.url ?? null,
      patch.events !== undefined,
      patch.events ?? null,
      patch.description !== undefined,
      patch.description ?? null,
      patch.enabled ?? null,
      now,
    ],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/** Deletes the endpoint, its deliveries (attempts cascade) and its replays. */
export async function deleteEndpoint(pool: pg.Pool, tenantId: string, id: string): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const { rowCount } = await client.query(
      'DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2',
      [tenantId, id],
    );
    await client.query('DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND endpoint_id = $2', [
      tenantId,
      id,
    ]);
    await client.query('DELETE FROM webhook_replays WHERE tenant_id = $1 AND endpoint_id = $2', [
      tenantId,
      id,
    ]);
    return (rowCount ?? 0) > 0;
  });
}

/**
 * New current secret; the one it replaces keeps signing until `now + overlapMs` (both signatures
 * in the header). Rotating again inside the overlap drops the oldest.
 */
export async function rotateSecret(
  db: Queryable,
  tenantId: string,
  id: string,
  secretEnc: string,
  now: Date,
  overlapMs: number,
): Promise<Webhook | null> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       previous_secret_enc = secret_enc,
       previous_secret_expires_at = $4,
       secret_enc = $3,
       updated_at = $5
     WHERE tenant_id = $1 AND id = $2
     RETURNING ${ENDPOINT_COLUMNS}`,
    [tenantId, id, secretEnc, new Date(now.getTime() + overlapMs), now],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  email_id: string;
  replay_id: string;
  status: WebhookDeliveryStatus;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  attempts: Array<{
    attempt: number;
    started_at: string;
    duration_ms: number;
    status_code: number | null;
    error: string | null;
    response_excerpt: string | null;
  }>;
}

/** Deliveries of an endpoint, newest first, each with its attempts (oldest first). */
export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  endpointId: string,
  opts: { limit: number; offset: string; status?: WebhookDeliveryStatus | undefined },
): Promise<{ data: WebhookDelivery[]; total: number }> {
  const status = opts.status ?? null;
  const [page, count] = await Promise.all([
    db.query<DeliveryRow>(
      `SELECT d.id, d.event_id, d.event_type, d.email_id, d.replay_id, d.status, d.next_attempt_at,
              d.last_status_code, d.last_error, d.created_at, d.updated_at,
              COALESCE((SELECT json_agg(json_build_object(
                 'attempt', a.attempt, 'started_at', a.started_at, 'duration_ms', a.duration_ms,
                 'status_code', a.status_code, 'error', a.error, 'response_excerpt', a.response_excerpt)
                 ORDER BY a.attempt)
               FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]') AS attempts
       FROM webhook_deliveries d
       WHERE d.tenant_id = $1 AND d.endpoint_id = $2 AND ($3::text IS NULL OR d.status = $3)
       ORDER BY d.id DESC LIMIT $4 OFFSET $5::bigint`,
      [tenantId, endpointId, status, opts.limit, opts.offset],
    ),
    db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_deliveries
       WHERE tenant_id = $1 AND endpoint_id = $2 AND ($3::text IS NULL OR status = $3)`,
      [tenantId, endpointId, status],
    ),
  ]);
  return {
    data: page.rows.map((r) => ({
      id: `whd_${r.id}`,
      webhookId: r.event_id,
      eventType: r.event_type,
      emailId: r.email_id,
      replayId: r.replay_id === '' ? null : r.replay_id,
      status: r.status,
      attempts: r.attempts.map((a) => ({
        attempt: a.attempt,
        startedAt: new Date(a.started_at).toISOString(),
        durationMs: a.duration_ms,
        statusCode: a.status_code,
        error: a.error,
        responseExcerpt: a.response_excerpt,
      })),
      nextAttemptAt: r.status === 'pending' ? r.next_attempt_at.toISOString() : null,
      lastStatusCode: r.last_status_code,
      lastError: r.last_error,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    })),
    total: Number(count.rows[0]?.n ?? 0),
  };
}

export async function insertReplay(
  db: Queryable,
  tenantId: string,
  r: { id: string; endpointId: string; since: Date; until: Date },
  now: Date,
): Promise<WebhookReplay> {
  await db.query(
    `INSERT INTO webhook_replays (id, tenant_id, endpoint_id, since, until, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [r.id, tenantId, r.endpointId, r.since, r.until, now],
  );
  return {
    id: r.id,
    webhookId: r.endpointId,
    since: r.since.toISOString(),
    until: r.until.toISOString(),
    status: 'pending',
  };
}

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
  return {
    insertEndpoint: (...a) => insertEndpoint(pool, ...a),
    getEndpoint: (...a) => getEndpoint(pool, ...a),
    listEndpoints: (...a) => listEndpoints(pool, ...a),
    updateEndpoint: (...a) => updateEndpoint(pool, ...a),
    deleteEndpoint: (...a) => deleteEndpoint(pool, ...a),
    rotateSecret: (...a) => rotateSecret(pool, ...a),
    listDeliveries: (...a) => listDeliveries(pool, ...a),
    insertReplay: (...a) => insertReplay(pool, ...a),
  };
}
