import type pg from 'pg';
import { bumpStreamHeads, insertStreamRows, STORED_EVENT, streamRewritten } from './rows.js';

/**
 * Events of a contact in the event stream (SPEC §25: "delivery, inbound, domain, contact and
 * custom events"): the custom events of `POST /events/track` (SPEC §27). They are no fact of an
 * email, so they do not travel through the log and the projector's fold; the api writes them in
 * its own transaction, taking the tenant's head row lock exactly as the projector does (bump the
 * head, insert the rows, commit): a tenant's seqs still commit in order, so a reader paging the
 * stream sees no gap and no duplicate. `email_id` holds the contact id (the key of the event);
 * erasure of the contact's address scrubs `email` and `data` ({@link eraseContactEvents}).
 */
export interface ContactStreamEvent {
  /** `evt_…`: unique in the tenant's stream. */
  id: string;
  contactId: string;
  /** The custom event's name. */
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** Appends the events to the tenant's stream in the caller's transaction; resolves with their cursors. */
export async function appendContactEvents(
  client: pg.ClientBase,
  tenantId: string,
  events: readonly ContactStreamEvent[],
): Promise<string[]> {
  if (events.length === 0) return [];
  const last = (await bumpStreamHeads(client, [[tenantId, events.length]])).get(tenantId)!;
  const seqs = events.map((_, i) => (last - BigInt(events.length - 1 - i)).toString());
  await insertStreamRows(
    client,
    events.map((e, i) => ({
      tenantId,
      seq: seqs[i]!,
      eventId: e.id,
      key: e.contactId,
      projectId: null,
      type: e.type,
      tags: '[]',
      body: JSON.stringify({ id: e.id, cursor: seqs[i], type: e.type, timestamp: e.timestamp, data: e.data }),
    })),
  );
  return seqs;
}

/**
 * Erasure (SPEC §14) of the contacts' own events in the stream: their address and free-form data
 * read `null` (the event, its name, time and contact id stay, like an erased email's events).
 */
export async function eraseContactEvents(
  client: pg.ClientBase,
  tenantId: string,
  contactIds: readonly string[],
): Promise<number> {
  if (contactIds.length === 0) return 0;
  const r = await client.query(
    `UPDATE event_stream
        SET payload = jsonb_set(${STORED_EVENT}, '{data}', (${STORED_EVENT} -> 'data') || '{"email": null, "data": null}'::jsonb),
            body = NULL
      WHERE tenant_id = $1 AND email_id = ANY($2::text[]) AND ${STORED_EVENT} -> 'data' ? 'contactId'
        AND (${STORED_EVENT} -> 'data' -> 'email' <> 'null'::jsonb OR ${STORED_EVENT} -> 'data' -> 'data' <> 'null'::jsonb)`,
    [tenantId, contactIds],
  );
  return streamRewritten(client, tenantId, r.rowCount ?? 0);
}
