import type { DeliveryEvent, WebhookPayload } from '@tern/contracts';
import { type EmailState, emailKey, evolve, initialEmailState } from '@tern/domain';
import { SCRUB_SPEC, scrubbedData } from '@tern/privacy';
import type pg from 'pg';
import type { EmailView } from '../email-log/views.js';
import type { PgReadModel, ProjectionBatch, TenantScope } from '../read-model.js';
import { eraseContactEvents } from './contact-events.js';
import { appendByTenant, STORED_EVENT, streamRewritten } from './rows.js';

/** An event of the stream as it is stored: its webhook body (SPEC §17) and its id. */
export interface StreamedPayload extends WebhookPayload {
  id: string;
}

/**
 * The webhook body of a delivery event (SPEC §17): `{ type, timestamp, data }`, `data` = the
 * email's id, tenant, project, recipient, subject, tags and status, plus the event's own fields.
 * The dispatcher's deliveries and the event stream (SPEC §25) both read an event this way.
 */
export function webhookPayload(
  event: DeliveryEvent,
  email: Pick<EmailView, 'projectId' | 'to' | 'subject' | 'tags' | 'status'>,
): WebhookPayload {
  const own = (event.data ?? {}) as Record<string, unknown>;
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: {
      ...own,
      emailId: event.emailId,
      tenantId: event.tenantId,
      projectId: email.projectId,
      to: email.to,
      subject: email.subject,
      tags: email.tags,
      status: email.status,
    },
  };
}

/** The webhook body of `event` for an email whose state, with the event folded in, is `state`. */
export function streamedPayload(event: DeliveryEvent, state: EmailState): StreamedPayload {
  return {
    id: event.id,
    ...webhookPayload(event, {
      projectId: state.queued?.projectId ?? null,
      to: state.queued?.toEmail ?? null,
      subject: state.queued?.subject ?? null,
      tags: state.queued?.tags ?? [],
      status: state.status,
    }),
  };
}

/**
 * The event's text as the stream sends it (`GET /events`, the SSE tail): its webhook body plus its
 * cursor, one line of JSON. Stored once (`event_stream.body`, migration 0310): a page is then the
 * concatenation of stored text, never rebuilt per read.
 */
export function streamedBody(payload: StreamedPayload, seq: bigint): string {
  const { id, type, timestamp, data } = payload;
  return JSON.stringify({ id, cursor: seq.toString(), type, timestamp, data });
}

/** Each applied event's email state with that event folded in, by `emailKey(tenant, event id)`. */
function statesAtEvents(batch: ProjectionBatch): Map<string, EmailState> {
  const out = new Map<string, EmailState>();
  for (const email of batch.folded.emails) {
    let state = email.before ?? initialEmailState(email.tenantId, email.emailId);
    for (const event of email.events) {
      state = evolve(state, event);
      out.set(emailKey(event.tenantId, event.id), state);
    }
  }
  return out;
}

/**
 * Appends a batch's freshly applied events to the stream, in log order per tenant. The tenant's
 * head row is bumped first (tenants in byte order, so concurrent batches lock heads in one order)
 * and stays locked until the projector's transaction commits: a tenant's batches commit in `seq`
 * order, and a reader never sees seq N before every seq below it (migration 0230).
 */
async function appendToStream(client: pg.ClientBase, batch: ProjectionBatch): Promise<void> {
  if (batch.applied.length === 0) return;
  const states = statesAtEvents(batch);
  await appendByTenant(client, batch.applied, (event, seq) => {
    const state =
      states.get(emailKey(event.tenantId, event.id)) ??
      evolve(initialEmailState(event.tenantId, event.emailId), event);
    const payload = streamedPayload(event, state);
    return {
      tenantId: event.tenantId,
      seq: seq.toString(),
      eventId: event.id,
      key: event.emailId,
      projectId: payload.data.projectId,
      type: event.type,
      tags: JSON.stringify(payload.data.tags),
      body: streamedBody(payload, seq),
    };
  });
}

const scopeSql = (scope: TenantScope, param: string, alias: string) =>
  'tenantId' in scope ? `${alias}.tenant_id = ${param}` : `NOT (${alias}.tenant_id = ANY(${param}::text[]))`;
const scopeParam = (scope: TenantScope) => ('tenantId' in scope ? scope.tenantId : [...scope.allBut]);

/** Batch size of an expiry statement. */
const EXPIRE_BATCH = 5000;

/**
 * Deletes the stream's events of `scope` recorded before `cutoff` (a batch per statement, until a
 * short one) and remembers per tenant the highest seq deleted (`expired_through`): a cursor before
 * it answers 410 even once its events are gone. Reads apply the cut-off themselves.
 *
 * `recorded_at` grows with `seq` in a tenant (each row is inserted under the tenant head's lock,
 * after the previous holder committed), so a tenant's expired events are the first of its seq
 * order: each tenant's oldest `EXPIRE_BATCH` events are read by the primary key, and a tenant whose
 * oldest event is kept is passed over after reading that one row. No index on the time is needed
 * (migration 0510 dropped it: an entry per event written for this job alone).
 */
export async function expireEventStream(
  client: pg.ClientBase,
  scope: TenantScope,
  cutoff: Date,
): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await client.query<{ n: string }>(
      `WITH gone AS (
         DELETE FROM event_stream WHERE (tenant_id, seq) IN (
           SELECT o.tenant_id, o.seq FROM event_stream_heads h
            CROSS JOIN LATERAL (SELECT e.tenant_id, e.seq, e.recorded_at FROM event_stream e
                                 WHERE e.tenant_id = h.tenant_id ORDER BY e.seq LIMIT $3) o
            WHERE ${scopeSql(scope, '$1', 'h')}
              AND (SELECT f.recorded_at FROM event_stream f
                    WHERE f.tenant_id = h.tenant_id ORDER BY f.seq LIMIT 1) < $2
              AND o.recorded_at < $2
            LIMIT $3)
         RETURNING tenant_id, seq),
       tops AS (SELECT tenant_id, max(seq) AS top, count(*) AS n FROM gone GROUP BY tenant_id),
       moved AS (UPDATE event_stream_heads h SET expired_through = GREATEST(h.expired_through, tops.top)
                   FROM tops WHERE h.tenant_id = tops.tenant_id RETURNING 1)
       SELECT COALESCE(sum(n), 0)::text AS n FROM tops`,
      [scopeParam(scope), cutoff, EXPIRE_BATCH],
    );
    const n = Number(rows[0]?.n ?? 0);
    total += n;
    if (n < EXPIRE_BATCH) return total;
  }
}

/**
 * The event stream (SPEC §25): one row per folded event with its tenant's `seq`, read by
 * `GET /events`, `GET /events/stream`, the webhook replay from a cursor and the MCP tool
 * (`queries.ts`). Kept across a rebuild (`keep`): its order never changes; a replay of the log
 * adds only events not streamed yet.
 */
export const eventStream: PgReadModel = {
  name: 'event stream',
  store: 'postgres',
  rebuild: 'keep',
  tables: ['event_stream', 'event_stream_heads'],
  apply: appendToStream,
  expire: expireEventStream,
  async eraseRecipient(client, { tenantId, address, emailIds, mentioned, contactIds }) {
    // The personal fields read null: of this recipient's emails every event's recipient, subject
    // and the type's personal fields; of the other emails naming it, the events naming it.
    const nulls = (t: string) => `COALESCE((SELECT jsonb_object_agg(f, 'null'::jsonb)
        FROM jsonb_array_elements_text($3::jsonb -> (${t}) -> 'remove') AS f), '{}'::jsonb)`;
    const own = `(${STORED_EVENT} -> 'data')`;
    const scrubbed = `jsonb_set(${STORED_EVENT}, '{data}', ${scrubbedData(own, 'type', '$3')} || ${nulls('type')}
        || CASE WHEN ${own} ? 'recipient' THEN '{"recipient": null}'::jsonb ELSE '{}'::jsonb END
        || CASE WHEN email_id = ANY($2::text[]) THEN '{"to": null, "subject": null}'::jsonb ELSE '{}'::jsonb END)`;
    const r = await client.query(
      // The stored text goes (NULL): the reads print the scrubbed payload instead; never the clear value.
      `UPDATE event_stream SET payload = ${scrubbed}, body = NULL
        WHERE tenant_id = $1
          AND ((email_id = ANY($2::text[]) AND (NOT (${own} ? 'recipient') OR lower(${own}->>'recipient') = $4))
               OR (email_id = ANY($5::text[]) AND lower(${own}->>'recipient') = $4))
          AND ${STORED_EVENT} IS DISTINCT FROM ${scrubbed}`,
      [tenantId, emailIds, SCRUB_SPEC, address, mentioned],
    );
    const emailEvents = await streamRewritten(client, tenantId, r.rowCount ?? 0);
    const custom = await eraseContactEvents(client, tenantId, contactIds ?? []);
    return { streamEvents: emailEvents + custom };
  },
};
