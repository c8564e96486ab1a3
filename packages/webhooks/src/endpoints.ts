import type { Webhook, WebhookEventType } from '@tern/contracts';
import { type PageWindow, tenantRecords, withTransaction } from '@tern/kernel';
import type pg from 'pg';

/**
 * SQL of the webhook endpoints (SPEC §17), the owner of `webhook_endpoints`: the api's `/webhooks*`
 * routes and the dispatcher's matching of events call these. Plain functions: a pool or client,
 * the tenant, no HTTP.
 */

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

const ENDPOINTS = tenantRecords<EndpointRow, Webhook>({
  table: 'webhook_endpoints',
  columns: ENDPOINT_COLUMNS,
  map: toWebhook,
});

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

export function getEndpoint(db: Queryable, tenantId: string, id: string): Promise<Webhook | null> {
  return ENDPOINTS.get(db, tenantId, id);
}

export async function listEndpoints(
  db: Queryable,
  tenantId: string,
  window: PageWindow,
): Promise<{ data: Webhook[]; total: number }> {
  const { items, total } = await ENDPOINTS.newestFirst(db, tenantId, window);
  return { data: items, total };
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

interface EndpointFilter {
  tenant_id: string;
  id: string;
  event_types: string[] | null;
}

/** An enabled endpoint's event filter (`null`: every event type). */
export interface EnabledEndpoint {
  tenantId: string;
  id: string;
  eventTypes: string[] | null;
}

/** The enabled endpoints of the tenants (or the one endpoint of a replay, if still enabled). */
export async function enabledEndpoints(
  db: Queryable,
  tenants: readonly string[],
  only?: { tenantId: string; endpointId: string },
): Promise<EnabledEndpoint[]> {
  const { rows } = only
    ? await db.query<EndpointFilter>(
        'SELECT tenant_id, id, event_types FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 AND enabled',
        [only.tenantId, only.endpointId],
      )
    : await db.query<EndpointFilter>(
        'SELECT tenant_id, id, event_types FROM webhook_endpoints WHERE tenant_id = ANY($1) AND enabled',
        [tenants],
      );
  return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id, eventTypes: r.event_types }));
}
