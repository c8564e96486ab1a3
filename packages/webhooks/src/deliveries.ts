import {
  type LogEvent,
  logEventKey,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
} from '@tern/contracts';
import { claimDueSql } from '@tern/jobs';
import type { PageWindow } from '@tern/kernel';
import type pg from 'pg';

/**
 * SQL of webhook deliveries and their attempts (SPEC §17), the owner of `webhook_deliveries` and
 * `webhook_attempts`: the dispatcher inserts, claims and records them, the api's `/webhooks*`
 * routes list them. (Erasure and retention: `erasure.ts`.)
 */

type Queryable = Pick<pg.Pool, 'query'>;

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
  opts: PageWindow & { status?: WebhookDeliveryStatus | undefined },
): Promise<{ data: WebhookDelivery[]; total: number }> {
  const status = opts.status ?? null;
  const [page, count] = await Promise.all([
    db.query<DeliveryRow>(
      // A claimed delivery's next attempt is at its lease's end at the earliest.
      `SELECT d.id, d.event_id, d.event_type, d.email_id, d.replay_id, d.status,
              GREATEST(d.next_attempt_at, d.lease_until) AS next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.updated_at,
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

export interface NewDelivery {
  tenantId: string;
  endpointId: string;
  event: LogEvent;
  replayId: string;
  /**
   * The body, when it is known already (a replay from the event stream: the stream holds each event
   * as its webhook body); otherwise the workers fix it before the first attempt. With its recipient.
   */
  body?: { json: string; recipient: string | null };
}

/**
 * Inserts deliveries, in the order given (ids ascending: the workers claim due rows by time, then
 * id); the unique (endpoint, event, replay) key makes a re-read a no-op.
 */
export async function insertDeliveries(
  db: Queryable,
  rows: readonly NewDelivery[],
  now: Date,
): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await db.query(
    `INSERT INTO webhook_deliveries
       (tenant_id, endpoint_id, event_id, event_type, email_id, replay_id, event, request_body, recipient,
        next_attempt_at, created_at, updated_at)
     SELECT t, e, ev, ty, em, r, j::jsonb, b, rc, $8, $8, $8
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $9::text[],
                 $10::text[]) WITH ORDINALITY AS u(t, e, ev, ty, em, r, j, b, rc, o)
     ORDER BY o
     ON CONFLICT (endpoint_id, event_id, replay_id) DO NOTHING`,
    [
      rows.map((r) => r.tenantId),
      rows.map((r) => r.endpointId),
      rows.map((r) => r.event.id),
      rows.map((r) => r.event.type),
      // An email's id, or a domain's for domain events (the subject the event is about).
      rows.map((r) => logEventKey(r.event)),
      rows.map((r) => r.replayId),
      rows.map((r) => JSON.stringify(r.event)),
      now,
      rows.map((r) => r.body?.json ?? null),
      rows.map((r) => r.body?.recipient ?? null),
    ],
  );
  return result.rowCount ?? 0;
}

/** A claimed delivery with its endpoint (its url and secrets are null once it is deleted). */
export interface ClaimedDelivery {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event: LogEvent;
  request_body: string | null;
  attempts: number;
  created_at: Date;
  url: string | null;
  enabled: boolean | null;
  secret_enc: string | null;
  previous_secret_enc: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * Claims up to `limit` due deliveries (`FOR UPDATE SKIP LOCKED`), each read with its endpoint. The
 * claim sets `lease_until` (migration 0490), a column no index holds, so on a page with room the
 * claimed version is a HOT update logged as the few bytes that changed; a delivery whose lease has
 * not ended is not due. Its next write (the attempt's outcome, a postponement) ends the lease.
 */
export async function claimDueDeliveries(
  db: Queryable,
  at: Date,
  leaseUntil: Date,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query<ClaimedDelivery>(
    `WITH claimed AS (${claimDueSql({
      table: 'webhook_deliveries',
      alias: 'd',
      due: `status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)`,
      orderBy: 'next_attempt_at, id',
      limit: '$3',
      set: 'lease_until = $2',
      returning: `d.id, d.tenant_id, d.endpoint_id, d.event_id, d.email_id, d.event, d.request_body, d.attempts,
                  d.created_at`,
    })})
     SELECT c.*, e.url, e.enabled, e.secret_enc, e.previous_secret_enc, e.previous_secret_expires_at
     FROM claimed c
     LEFT JOIN webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
     ORDER BY c.id`,
    [at, leaseUntil, limit],
  );
  return rows;
}

/** Ends a delivery without an HTTP attempt (endpoint gone or disabled). */
export async function abandonDelivery(db: Queryable, id: string, reason: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, updated_at = $3 WHERE id = $1`,
    [id, reason, now],
  );
}

/** Puts the deliveries off until `until` (their email is not projected yet). */
export async function postponeDeliveries(db: Queryable, ids: readonly string[], until: Date): Promise<void> {
  await db.query(
    'UPDATE webhook_deliveries SET next_attempt_at = $2, lease_until = NULL WHERE id = ANY($1::bigint[])',
    [ids, until],
  );
}

/** Fixes the bodies (and recipients) of deliveries, in one statement. */
export async function fixDeliveryBodies(
  db: Queryable,
  fixed: readonly { id: string; body: string; recipient: string | null }[],
): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries d SET request_body = u.body, recipient = u.recipient
     FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(id, body, recipient) WHERE d.id = u.id`,
    [fixed.map((f) => f.id), fixed.map((f) => f.body), fixed.map((f) => f.recipient)],
  );
}

/** One attempt of a delivery and what follows from it (`recordAttempt`). */
export interface AttemptOutcome {
  deliveryId: string;
  tenantId: string;
  endpointId: string;
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** The delivery's new status. */
  status: 'pending' | 'delivered' | 'failed';
  nextAttemptAt: Date;
  finishedAt: Date;
  ok: boolean;
  /** A failure run that began at or before this disables the endpoint. */
  disableIfFailingSince: Date;
}

/**
 * One statement (atomic on its own): the attempt, the delivery's new state, and the endpoint's
 * failure run — touched on a failure, or on a success that ends a run, so a healthy endpoint's
 * row is not rewritten (and locked) by every delivery. Answers whether the endpoint is disabled
 * now (undefined when its row was not touched).
 */
export async function recordAttempt(db: Queryable, a: AttemptOutcome): Promise<boolean | null | undefined> {
  const { rows } = await db.query<{ disabled: boolean | null }>(
    `WITH attempt AS (
       INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING
     ), delivery AS (
       UPDATE webhook_deliveries SET status = $8, attempts = $2, next_attempt_at = $9, lease_until = NULL,
         last_status_code = $5, last_error = $6, updated_at = $10
       WHERE id = $1
     ), endpoint AS (
       UPDATE webhook_endpoints SET
         failing_since = CASE WHEN $11 THEN NULL ELSE COALESCE(failing_since, $3) END,
         enabled = CASE WHEN NOT $11 AND COALESCE(failing_since, $3) <= $14 THEN false ELSE enabled END,
         disabled_reason = CASE WHEN NOT $11 AND COALESCE(failing_since, $3) <= $14 AND enabled
                                THEN 'every attempt failed for 5 days' ELSE disabled_reason END,
         updated_at = CASE WHEN NOT $11 AND COALESCE(failing_since, $3) <= $14 AND enabled THEN $10 ELSE updated_at END
       WHERE tenant_id = $12 AND id = $13 AND (NOT $11 OR failing_since IS NOT NULL)
       RETURNING enabled
     )
     SELECT NOT enabled AS disabled FROM endpoint`,
    [
      a.deliveryId,
      a.attempt,
      a.startedAt,
      a.durationMs,
      a.statusCode,
      a.error,
      a.responseExcerpt,
      a.status,
      a.nextAttemptAt,
      a.finishedAt,
      a.ok,
      a.tenantId,
      a.endpointId,
      a.disableIfFailingSince,
    ],
  );
  return rows[0]?.disabled;
}

/**
 * Deletes finished deliveries (their attempts cascade) last updated before `cutoff`, in batches of
 * 1000, so the sweep never holds many row locks or a long transaction; answers how many went.
 */
export async function deleteFinishedDeliveries(db: Queryable, cutoff: Date): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1 LIMIT 1000)`,
      [cutoff],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < 1000) break;
  }
  return deleted;
}
