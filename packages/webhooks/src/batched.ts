import { isInboundEvent, type LogEvent, logEventKey } from '@tern/contracts';
import { columnArrays } from '@tern/kernel';
import type pg from 'pg';
import type { AttemptOutcome } from './deliveries.js';

/**
 * The dispatcher's statements over several deliveries at once (issue 45: the Postgres work per
 * email): a consumed batch of events turned into deliveries with the endpoints matched in SQL,
 * and successful attempts recorded together. The rest of `webhook_deliveries` and
 * `webhook_attempts` is in `deliveries.ts`.
 */

type Queryable = Pick<pg.Pool, 'query'>;

/**
 * The live deliveries of `events`, in one statement: one per event and enabled endpoint of its
 * tenant whose filter takes the event's type (NULL: every type); an inbound message a route acted
 * on goes to the route's webhooks only (SPEC §24). In event order, then endpoint id; the unique
 * (endpoint, event, replay) key makes a re-read a no-op. Answers the deliveries made.
 */
export async function enqueueLiveDeliveries(
  db: Queryable,
  events: readonly LogEvent[],
  now: Date,
): Promise<number> {
  if (events.length === 0) return 0;
  const result = await db.query(
    `INSERT INTO webhook_deliveries
       (tenant_id, endpoint_id, event_id, event_type, email_id, replay_id, event, next_attempt_at, created_at, updated_at)
     SELECT u.t, e.id, u.ev, u.ty, u.em, '', u.j::jsonb, $7, $7, $7
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
            WITH ORDINALITY AS u(t, ev, ty, em, j, routed, o)
       JOIN webhook_endpoints e ON e.tenant_id = u.t AND e.enabled
      WHERE CASE WHEN u.routed IS NOT NULL THEN e.id = ANY(u.routed::text[])
                 ELSE e.event_types IS NULL OR u.ty = ANY(e.event_types) END
      ORDER BY u.o, e.id
     ON CONFLICT (endpoint_id, event_id, replay_id) DO NOTHING`,
    [
      events.map((e) => e.tenantId),
      events.map((e) => e.id),
      events.map((e) => e.type),
      // An email's id, or a domain's for domain events (the subject the event is about).
      events.map((e) => logEventKey(e)),
      events.map((e) => JSON.stringify(e)),
      events.map((e) => {
        const routed = isInboundEvent(e) ? e.data.webhooks : undefined;
        return routed === undefined ? null : `{${routed.map((id) => JSON.stringify(id)).join(',')}}`;
      }),
      now,
    ],
  );
  return result.rowCount ?? 0;
}

/**
 * Successful attempts of several deliveries in one statement (issue 45): each attempt, its
 * delivery `delivered`, and the failure run of an endpoint that had one ended (what
 * `recordAttempt` does for an `ok` attempt, for a batch).
 */
export async function recordDelivered(
  db: Queryable,
  done: readonly Omit<
    AttemptOutcome,
    'status' | 'nextAttemptAt' | 'ok' | 'disableIfFailingSince' | 'error'
  >[],
): Promise<void> {
  if (done.length === 0) return;
  await db.query(
    `WITH a AS (
       SELECT * FROM unnest($1::bigint[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[],
                            $7::timestamptz[], $8::text[], $9::text[])
         AS a(id, attempt, started_at, duration_ms, status_code, excerpt, finished_at, tenant_id, endpoint_id)
     ), attempt AS (
       INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt)
       SELECT id, attempt, started_at, duration_ms, status_code, NULL, excerpt FROM a ON CONFLICT DO NOTHING
     ), delivery AS (
       UPDATE webhook_deliveries d SET status = 'delivered', attempts = a.attempt, next_attempt_at = a.finished_at,
         last_status_code = a.status_code, last_error = NULL, updated_at = a.finished_at
         FROM a WHERE d.id = a.id
     )
     UPDATE webhook_endpoints e SET failing_since = NULL
       FROM (SELECT DISTINCT tenant_id, endpoint_id FROM a) x
      WHERE e.tenant_id = x.tenant_id AND e.id = x.endpoint_id AND e.failing_since IS NOT NULL`,
    columnArrays(done, [
      'deliveryId',
      'attempt',
      'startedAt',
      'durationMs',
      'statusCode',
      'responseExcerpt',
      'finishedAt',
      'tenantId',
      'endpointId',
    ]),
  );
}
