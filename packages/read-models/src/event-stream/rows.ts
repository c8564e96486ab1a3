import { columnArrays } from '@tern/kernel';
import type pg from 'pg';

/**
 * The two statements every writer of the event stream runs, in its own transaction: bump the
 * tenants' heads (each row stays locked until the commit, so a tenant's seqs commit in order and a
 * reader never sees seq N before every seq below it, migration 0230), then insert the rows with
 * those seqs. The projector writes delivery events with them, the api a contact's custom events.
 */

/** One row of `event_stream`: `body` is the event's JSON text with its `cursor` (the seq). */
export interface StreamRow {
  tenantId: string;
  seq: string;
  eventId: string;
  /** The email's id, or the contact's for a contact's event. */
  key: string;
  projectId: string | null;
  type: string;
  /** The tags as a JSON array text. */
  tags: string;
  body: string;
}

/**
 * Adds `count` to each tenant's head, tenants in the order given (callers sort them: concurrent
 * writers then lock heads in one order), and answers each tenant's new last seq.
 */
export async function bumpStreamHeads(
  client: pg.ClientBase,
  counts: readonly (readonly [tenantId: string, count: number])[],
): Promise<Map<string, bigint>> {
  const { rows } = await client.query<{ tenant_id: string; last_seq: string }>(
    `INSERT INTO event_stream_heads AS h (tenant_id, last_seq)
     SELECT t, n FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS u(t, n, o) ORDER BY o
     ON CONFLICT (tenant_id) DO UPDATE SET last_seq = h.last_seq + EXCLUDED.last_seq
     RETURNING tenant_id, last_seq`,
    [counts.map(([t]) => t), counts.map(([, n]) => n)],
  );
  return new Map(rows.map((r) => [r.tenant_id, BigInt(r.last_seq)]));
}

/**
 * After an erasure rewrote `rewritten` of the tenant's stored events, in its transaction: bumps the
 * tenant's `revision` (migration 0450), so no process answers a page read before it from memory
 * (`page-cache.ts`). Answers `rewritten`.
 */
export async function streamRewritten(
  client: pg.ClientBase,
  tenantId: string,
  rewritten: number,
): Promise<number> {
  if (rewritten > 0)
    await client.query('UPDATE event_stream_heads SET revision = revision + 1 WHERE tenant_id = $1', [
      tenantId,
    ]);
  return rewritten;
}

/**
 * A stored event's JSON (its webhook body and id, no cursor): `payload` once an erasure rewrote it,
 * else its `body` without the cursor (migration 0480: a new row holds the event once, as text).
 */
export const STORED_EVENT = `COALESCE(payload, body::jsonb - 'cursor')`;

/**
 * Inserts the rows. A seq whose event is already streamed (a rebuild replaying the log) is
 * skipped: a gap in the numbers, never a second copy. The texts go as ONE JSON array parameter
 * (escaped natively, not element by element as a text[] parameter is). `payload` stays NULL
 * (`STORED_EVENT`).
 */
export async function insertStreamRows(client: pg.ClientBase, rows: readonly StreamRow[]): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO event_stream (tenant_id, seq, event_id, email_id, project_id, type, tags, recorded_at, body)
     SELECT u.t, u.s, u.e, u.m, u.p, u.ty, ARRAY(SELECT jsonb_array_elements_text(u.g)), clock_timestamp(), u.b
       FROM ROWS FROM (unnest($1::text[]), unnest($2::bigint[]), unnest($3::text[]), unnest($4::text[]),
                       unnest($5::text[]), unnest($6::text[]), unnest($7::jsonb[]), json_array_elements_text($8::json))
            AS u(t, s, e, m, p, ty, g, b)
     ON CONFLICT DO NOTHING`,
    [
      ...columnArrays(rows, ['tenantId', 'seq', 'eventId', 'key', 'projectId', 'type', 'tags']),
      JSON.stringify(rows.map((r) => r.body)),
    ],
  );
}

/**
 * Appends `events` to their tenants' streams in the caller's transaction: grouped by tenant (in the
 * order given within one), heads bumped in tenant byte order (concurrent writers lock them in one
 * order), each event's row built by `rowOf` with its seq, then the rows inserted.
 */
export async function appendByTenant<E extends { tenantId: string }>(
  client: pg.ClientBase,
  events: readonly E[],
  rowOf: (event: E, seq: bigint) => StreamRow,
): Promise<void> {
  if (events.length === 0) return;
  const byTenant = new Map<string, E[]>();
  for (const e of events) {
    const list = byTenant.get(e.tenantId);
    if (list) list.push(e);
    else byTenant.set(e.tenantId, [e]);
  }
  const tenants = [...byTenant.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const heads = await bumpStreamHeads(
    client,
    tenants.map((t) => [t, byTenant.get(t)?.length ?? 0] as const),
  );
  const rows: StreamRow[] = [];
  for (const [tenantId, last] of heads) {
    const list = byTenant.get(tenantId) ?? [];
    let seq = last - BigInt(list.length);
    for (const event of list) {
      seq += 1n;
      rows.push(rowOf(event, seq));
    }
  }
  await insertStreamRows(client, rows);
}
