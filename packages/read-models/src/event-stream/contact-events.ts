import type pg from 'pg';

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
  const { rows } = await client.query<{ last_seq: string }>(
    `INSERT INTO event_stream_heads AS h (tenant_id, last_seq) VALUES ($1, $2)
     ON CONFLICT (tenant_id) DO UPDATE SET last_seq = h.last_seq + EXCLUDED.last_seq
     RETURNING last_seq::text`,
    [tenantId, events.length],
  );
  const last = BigInt(rows[0]!.last_seq);
  const seqs = events.map((_, i) => (last - BigInt(events.length - 1 - i)).toString());
  const bodies = events.map((e, i) =>
    JSON.stringify({ id: e.id, cursor: seqs[i], type: e.type, timestamp: e.timestamp, data: e.data }),
  );
  await client.query(
    `INSERT INTO event_stream (tenant_id, seq, event_id, email_id, project_id, type, tags, recorded_at, payload, body)
     SELECT $1, u.s, u.e, u.c, NULL, u.ty, '{}', clock_timestamp(), u.b::jsonb - 'cursor', u.b
       FROM ROWS FROM (unnest($2::bigint[]), unnest($3::text[]), unnest($4::text[]), unnest($5::text[]),
                       json_array_elements_text($6::json)) AS u(s, e, c, ty, b)
     ON CONFLICT DO NOTHING`,
    [
      tenantId,
      seqs,
      events.map((e) => e.id),
      events.map((e) => e.contactId),
      events.map((e) => e.type),
      JSON.stringify(bodies),
    ],
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
        SET payload = jsonb_set(payload, '{data}', (payload -> 'data') || '{"email": null, "data": null}'::jsonb),
            body = NULL
      WHERE tenant_id = $1 AND email_id = ANY($2::text[]) AND payload -> 'data' ? 'contactId'
        AND (payload -> 'data' -> 'email' <> 'null'::jsonb OR payload -> 'data' -> 'data' <> 'null'::jsonb)`,
    [tenantId, contactIds],
  );
  return r.rowCount ?? 0;
}
