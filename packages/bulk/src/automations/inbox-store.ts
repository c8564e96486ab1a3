import { type AutomationStep, EVENT_TYPES } from '@tern/contracts';
import { leaseClaim } from '@tern/jobs';
import { eventStreamHeadSql, eventsPage } from '@tern/read-models';
import type pg from 'pg';
import { INBOX_TABLE } from './runner-store.js';

/**
 * The automations' trigger inbox (SPEC §27): its claim and handling — an event starts a run or
 * wakes a waiting one — and the follower that copies the event stream's events into it.
 */

type Queryable = Pick<pg.Pool, 'query'>;

export interface InboxEvent {
  tenant_id: string;
  id: string;
  name: string;
  contact_id: string;
  occurred_at: Date;
}

/** Claims up to `batchSize` inbox events, oldest first, with a lease. */
export const claimInbox = leaseClaim<InboxEvent>({
  table: INBOX_TABLE,
  alias: 'i',
  orderBy: 'occurred_at',
  returning: 'i.tenant_id, i.id, i.name, i.contact_id, i.occurred_at',
});

/**
 * Handles one inbox event in the caller's transaction: deletes it (only while this owner holds
 * it: a lapsed lease handed it to another), starts a run of every automation it triggers for a
 * subscribed contact without one active (run id derived from the automation and the event, so a
 * redo starts nothing twice), and ends the waits of the contact's runs waiting for it since
 * before it occurred. Resolves with the runs started and the waits ended.
 */
export async function handleInboxEvent(
  client: pg.ClientBase,
  e: InboxEvent,
  owner: string,
  at: Date,
): Promise<{ started: number; woken: number }> {
  const { rows } = await client.query<{ started: string; woken: string }>(
    `WITH mine AS (
       DELETE FROM automation_inbox WHERE tenant_id = $1 AND id = $2 AND lease_owner = $6 RETURNING 1
     ), started AS (
       INSERT INTO automation_runs (tenant_id, id, automation_id, contact_id, state, position, due_at,
                                    started_at, updated_at)
       SELECT a.tenant_id, 'run_' || left(encode(sha256(convert_to(a.id || ':' || $2, 'UTF8')), 'hex'), 24),
              a.id, $4, 'active', '0', $5, $5, $5
         FROM automations a, mine
        WHERE a.tenant_id = $1 AND a.trigger_event = $3 AND a.enabled
          AND EXISTS (SELECT 1 FROM contacts ct WHERE ct.tenant_id = $1 AND ct.id = $4 AND ct.subscribed)
       ON CONFLICT DO NOTHING
       RETURNING 1
     ), woken AS (
       UPDATE automation_runs r SET wait_arrived = true, due_at = $5, updated_at = $5
         FROM mine
        WHERE r.tenant_id = $1 AND r.contact_id = $4 AND r.state = 'active' AND r.waiting = 'event'
          AND r.wait_event = $3 AND NOT r.wait_arrived AND r.wait_since <= $7
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM started) AS started, (SELECT count(*) FROM woken) AS woken`,
    [e.tenant_id, e.id, e.name, e.contact_id, at, owner, e.occurred_at],
  );
  return { started: Number(rows[0]?.started ?? 0), woken: Number(rows[0]?.woken ?? 0) };
}

// ---- the follower of the event stream -------------------------------------------------------

const DELIVERY = new Set<string>(EVENT_TYPES);

/**
 * Every delivery event type the tenants' automations trigger on (the enabled ones) or wait for
 * (all: a disabled automation's runs finish), by tenant.
 */
export async function followedTypes(pool: Queryable): Promise<Map<string, string[]>> {
  const { rows } = await pool.query<{
    tenant_id: string;
    trigger_event: string;
    enabled: boolean;
    steps: AutomationStep[];
  }>(
    `SELECT a.tenant_id, a.trigger_event, a.enabled, a.steps FROM automations a
      JOIN automation_stream_cursors c ON c.tenant_id = a.tenant_id`,
  );
  const out = new Map<string, Set<string>>();
  const add = (tenant: string, type: string) => {
    if (!DELIVERY.has(type)) return;
    const set = out.get(tenant) ?? new Set<string>();
    set.add(type);
    out.set(tenant, set);
  };
  const walk = (tenant: string, steps: readonly AutomationStep[]) => {
    for (const s of steps) {
      if ('waitFor' in s) add(tenant, s.waitFor.event);
      if ('then' in s && s.then) walk(tenant, s.then);
      if ('else' in s && s.else) walk(tenant, s.else);
    }
  };
  for (const r of rows) {
    if (r.enabled) add(r.tenant_id, r.trigger_event);
    walk(r.tenant_id, r.steps);
  }
  return new Map([...out].map(([t, s]) => [t, [...s].sort()]));
}

/**
 * Copies the tenant's next page of stream events of `types` into the inbox (the contact is the
 * recipient's contact; events of other addresses are passed over) and moves the tenant's cursor,
 * in the caller's transaction. The cursor row is locked `SKIP LOCKED`: another worker following
 * the same tenant skips it. Resolves with the events copied, or null when another holds it.
 */
export async function followStream(
  client: pg.ClientBase,
  tenantId: string,
  types: readonly string[],
  pageSize: number,
): Promise<{ copied: number; more: boolean } | null> {
  const { rows } = await client.query<{ last_seq: string }>(
    'SELECT last_seq::text FROM automation_stream_cursors WHERE tenant_id = $1 FOR UPDATE SKIP LOCKED',
    [tenantId],
  );
  const from = rows[0]?.last_seq;
  if (from === undefined) return null;
  const page = await eventsPage(client, {
    tenantId,
    after: from,
    limit: pageSize,
    cutoff: new Date(0),
    types,
  });
  if (page.expired) {
    // Retention took events past the cursor: follow on from the head.
    await client.query(
      `UPDATE automation_stream_cursors SET last_seq = ${eventStreamHeadSql('$1')} WHERE tenant_id = $1`,
      [tenantId],
    );
    return { copied: 0, more: false };
  }
  const events = page.items.map(
    (j) => JSON.parse(j) as { id: string; type: string; timestamp: string; data: { to?: string | null } },
  );
  const withTo = events.filter((e) => typeof e.data.to === 'string');
  let copied = 0;
  if (withTo.length > 0) {
    const r = await client.query(
      `INSERT INTO automation_inbox (tenant_id, id, name, contact_id, occurred_at)
       SELECT $1, u.id, u.name, ct.id, u.at
         FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS u(id, name, email, at)
         JOIN contacts ct ON ct.tenant_id = $1 AND ct.email = lower(u.email)
       ON CONFLICT (tenant_id, id) DO NOTHING`,
      [
        tenantId,
        withTo.map((e) => e.id),
        withTo.map((e) => e.type),
        withTo.map((e) => e.data.to),
        withTo.map((e) => e.timestamp),
      ],
    );
    copied = r.rowCount ?? 0;
  }
  await client.query('UPDATE automation_stream_cursors SET last_seq = $2 WHERE tenant_id = $1', [
    tenantId,
    page.next,
  ]);
  return { copied, more: page.hasMore };
}
