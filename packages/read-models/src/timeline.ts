import type { DeliveryEvent } from '@tern/contracts';
import { emailKey } from '@tern/domain';
import { mentionPattern, SCRUB_SPEC, scrubbedData } from '@tern/privacy';
import type pg from 'pg';
import { batchPruner } from './prune.js';
import type { PgReadModel } from './read-model.js';

/**
 * The timeline of `GET /emails/:id` (SPEC §11): one row per event (`email_events`), which is also
 * the claim of the event's id; `processed_events` holds the ids of events dead-lettered instead
 * of folded (a redelivery of one is a known duplicate).
 */
export const timeline: PgReadModel = {
  name: 'timeline',
  store: 'postgres',
  rebuild: 'truncate',
  tables: ['email_events', 'processed_events'],
  emailContent: [{ table: 'email_events', id: 'email_id', at: 'occurred_at', only: null }],
  async eraseRecipient(client, { tenantId, address, emailIds, mentioned }) {
    // Every event's personal fields, as listed next to the event contracts: of this recipient's
    // emails, the events of the whole message and those naming it (another recipient's own outcomes
    // are sealed under that recipient's key and stay); of the other emails naming it, the events
    // naming it (SPEC §22), in its recipient or anywhere in its data — a whole-message provider
    // diagnostic quoting a cc's address (issue 40 item 10).
    const r = await client.query(
      `UPDATE email_events SET data = ${scrubbedData('data', 'type', '$3')}
        WHERE tenant_id = $1
          AND ((email_id = ANY($2::text[]) AND (NOT (data ? 'recipient') OR lower(data->>'recipient') = $4))
               OR (email_id = ANY($5::text[])
                   AND (lower(data->>'recipient') = $4 OR lower(data::text) ~ $6)))
          AND data IS DISTINCT FROM ${scrubbedData('data', 'type', '$3')}`,
      [tenantId, emailIds, SCRUB_SPEC, address, mentioned, mentionPattern(address)],
    );
    return { timelineEvents: r.rowCount ?? 0 };
  },
};

/**
 * Claims the events and writes their timeline rows in one statement: an event id already in
 * `email_events` (folded before) or in `processed_events` (dead-lettered) is not inserted, and
 * only the ids inserted here come back — the events to fold (migration 0095). Concurrent batches
 * holding the same id wait on each other's unique index entry; one wins. Answers the keys
 * (`emailKey(tenant, event id)`) of the fresh events.
 */
export async function claimIntoTimeline(
  client: pg.ClientBase,
  events: readonly DeliveryEvent[],
): Promise<Set<string>> {
  const { rows } = await client.query<{ tenant_id: string; event_id: string }>(
    `INSERT INTO email_events (tenant_id, email_id, event_id, type, occurred_at, data)
     SELECT u.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::jsonb[])
              AS u(tenant_id, email_id, event_id, type, occurred_at, data)
      WHERE NOT EXISTS (SELECT 1 FROM processed_events p
                         WHERE p.tenant_id = u.tenant_id AND p.event_id = u.event_id)
     ON CONFLICT (tenant_id, event_id) DO NOTHING
     RETURNING tenant_id, event_id`,
    [
      events.map((e) => e.tenantId),
      events.map((e) => e.emailId),
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.occurredAt),
      events.map((e) => JSON.stringify(e.data ?? {})),
    ],
  );
  return new Set(rows.map((r) => emailKey(r.tenant_id, r.event_id)));
}

/** The last timeline claim taken (`email_events.claim_seq`), 0 before the first. */
export async function lastClaim(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query<{ cut: string }>(
    'SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS cut FROM email_events_claim_seq',
  );
  return Number(rows[0]?.cut ?? 0);
}

/**
 * Which of `events` the timeline has claimed (committed): the events the live fold has counted.
 * A reprojection folds exactly these (services/projector/src/reproject.ts).
 */
export async function claimedEvents(
  db: pg.Pool | pg.ClientBase,
  events: readonly DeliveryEvent[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ tenant_id: string; event_id: string }>(
    `SELECT tenant_id, event_id FROM email_events
      WHERE (tenant_id, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [events.map((e) => e.tenantId), events.map((e) => e.id)],
  );
  return new Set(rows.map((r) => emailKey(r.tenant_id, r.event_id)));
}

/** Claims a dead-lettered event's id: a redelivery of it is then a known duplicate, never retried. */
export async function markProcessed(client: pg.ClientBase, event: DeliveryEvent): Promise<void> {
  await client.query(
    'INSERT INTO processed_events (tenant_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    [event.tenantId, event.id],
  );
}

/** Deletes up to `limit` claims of dead-lettered events older than `cutoff` (the dedup window). */
export const pruneProcessed = batchPruner({ table: 'processed_events', at: 'processed_at', key: 'ctid' });

/**
 * The timeline's events a person did, as a relation `(tenant_id, email_id, event_id, type,
 * occurred_at)`: a scanner's open or click (`bot`) and a machine open (`machine`, SPEC §21) are
 * left out, as the fold leaves them out of the counts. Embedded by packages/bulk's `mailDaily`,
 * which joins it to the campaign's mail in one scan.
 */
export const humanEventsSql = `(SELECT tenant_id, email_id, event_id, type, occurred_at FROM email_events
    WHERE NOT (type IN ('email.opened', 'email.clicked') AND COALESCE(data->>'bot', '') = 'true')
      AND NOT (type = 'email.opened' AND COALESCE(data->>'machine', '') = 'true'))`;

/** An email's timeline, oldest first (ties by event id, bytewise). */
export async function timelineOf(
  db: pg.Pool | pg.ClientBase,
  tenantId: string,
  emailId: string,
): Promise<{ event_id: string; type: string; occurred_at: Date; data: Record<string, unknown> }[]> {
  const { rows } = await db.query<{
    event_id: string;
    type: string;
    occurred_at: Date;
    data: Record<string, unknown>;
  }>(
    `SELECT event_id, type, occurred_at, data FROM email_events WHERE tenant_id = $1 AND email_id = $2
      ORDER BY occurred_at, event_id COLLATE "C"`,
    [tenantId, emailId],
  );
  return rows;
}
