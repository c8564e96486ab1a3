import {
  type DomainEvent,
  type DomainWebhookPayload,
  INBOUND_PERSONAL_FIELDS,
  type InboundEvent,
  isDomainEvent,
  LONE_SURROGATE,
} from '@tern/contracts';
import type pg from 'pg';
import { appendByTenant, STORED_EVENT, streamRewritten } from './rows.js';

/**
 * The log's events that are no email Tern sent — a sending domain's check (`domain.*`, SPEC §20) and
 * a received message (`email.received`, SPEC §24) — in the event stream (SPEC §25: "delivery,
 * inbound, domain, contact and custom events"). The projector writes them after a batch's delivery
 * events, in a transaction of their own that takes the tenant's head row lock as every writer does
 * (bump the heads, insert the rows, commit), so a tenant's seqs still commit in order. An event
 * already streamed (a batch delivered again) is skipped: a gap in the numbers, never a copy.
 * `email_id` holds the domain's or the message's id; both read as their webhook body (SPEC §17).
 */

/** The body of a domain event (SPEC §20): the domain as its check found it. */
export function domainPayload(event: DomainEvent): DomainWebhookPayload {
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: { domainId: event.domainId, tenantId: event.tenantId, ...event.data },
  };
}

/**
 * The body of an `email.received` (SPEC §24): the message's metadata and the links of its content
 * on the api (`/inbound/:id`, `/raw`), never the body itself.
 */
export function inboundPayload(event: InboundEvent) {
  const id = event.inboundId;
  return {
    type: event.type,
    timestamp: event.occurredAt,
    data: {
      inboundId: id,
      tenantId: event.tenantId,
      ...event.data,
      links: { self: `/inbound/${id}`, raw: `/inbound/${id}/raw` },
    },
  };
}

const UNSTORABLE = new RegExp(`\u0000|${LONE_SURROGATE.source}`, 'g');
/**
 * Every string of `value` as jsonb can hold it: U+0000 and a lone surrogate become U+FFFD. A received
 * subject is the sender's text; one jsonb refuses must not stop the projector (it would retry it forever).
 */
function storable(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(UNSTORABLE, '\uFFFD');
  if (Array.isArray(value)) return value.map(storable);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, storable(v)]));
  return value;
}

/** Appends the events to their tenants' streams in the caller's transaction, in the order given per tenant. */
export function streamLogEvents(
  client: pg.ClientBase,
  events: readonly (DomainEvent | InboundEvent)[],
): Promise<void> {
  return appendByTenant(client, events, (event, seq) => {
    const { type, timestamp, data } = isDomainEvent(event) ? domainPayload(event) : inboundPayload(event);
    return {
      tenantId: event.tenantId,
      seq: seq.toString(),
      eventId: event.id,
      key: isDomainEvent(event) ? event.domainId : event.inboundId,
      projectId: null,
      type,
      tags: '[]',
      body: JSON.stringify({ id: event.id, cursor: seq.toString(), type, timestamp, data: storable(data) }),
    };
  });
}

/**
 * Erasure (SPEC §14, §24) of received messages' events in the stream: their addresses, subject and
 * message id read `null` (the event, its time, size and verdicts stay). A message announced after the
 * erasure needs none of this: its personal fields were sealed under the erased key and read `null`.
 */
export async function eraseInboundEvents(
  client: pg.ClientBase,
  tenantId: string,
  inboundIds: readonly string[],
): Promise<number> {
  if (inboundIds.length === 0) return 0;
  const nulls = JSON.stringify(Object.fromEntries(INBOUND_PERSONAL_FIELDS.map((f) => [f, null])));
  const r = await client.query(
    `UPDATE event_stream
        SET payload = jsonb_set(${STORED_EVENT}, '{data}', (${STORED_EVENT} -> 'data') || $3::jsonb), body = NULL
      WHERE tenant_id = $1 AND email_id = ANY($2::text[]) AND type = 'email.received'
        AND (${STORED_EVENT} -> 'data') || $3::jsonb IS DISTINCT FROM ${STORED_EVENT} -> 'data'`,
    [tenantId, inboundIds, nulls],
  );
  return streamRewritten(client, tenantId, r.rowCount ?? 0);
}
