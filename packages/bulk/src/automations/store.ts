import type {
  Automation,
  AutomationRun,
  AutomationRunState,
  AutomationStep,
  CreateAutomationBody,
  UpdateAutomationBody,
} from '@tern/contracts';
import { type PageQuery, pageWindow } from '@tern/contracts';
import { newestFirstPage, type Page } from '@tern/kernel';
import { appendContactEvents, eventStreamHeadSql } from '@tern/read-models';
import type pg from 'pg';

/** Automations, their runs and the trigger inbox in Postgres (SPEC §27): the api's statements. */

type Queryable = Pick<pg.Pool, 'query'>;

interface AutomationRow {
  id: string;
  name: string;
  from_address: string | null;
  trigger_event: string;
  steps: AutomationStep[];
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, from_address, trigger_event, steps, enabled, created_at, updated_at';

async function toAutomations(db: Queryable, tenantId: string, rows: AutomationRow[]): Promise<Automation[]> {
  if (rows.length === 0) return [];
  const states = await db.query<{ automation_id: string; state: AutomationRunState; n: string }>(
    `SELECT automation_id, state, count(*) AS n FROM automation_runs
      WHERE tenant_id = $1 AND automation_id = ANY($2::text[]) GROUP BY automation_id, state`,
    [tenantId, rows.map((r) => r.id)],
  );
  return rows.map((r) => {
    const runs = { active: 0, completed: 0, stopped: 0 };
    for (const s of states.rows) if (s.automation_id === r.id) runs[s.state] = Number(s.n);
    return {
      id: r.id,
      name: r.name,
      from: r.from_address,
      trigger: { event: r.trigger_event },
      steps: r.steps,
      enabled: r.enabled,
      runs,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    };
  });
}

/**
 * The follower of the event stream starts at the tenant's head when its first automation is made:
 * automations react to events from then on, not to the past.
 */
const FOLLOW_FROM_HEAD = `INSERT INTO automation_stream_cursors (tenant_id, last_seq)
  VALUES ($1, ${eventStreamHeadSql('$1')}) ON CONFLICT (tenant_id) DO NOTHING`;

export async function insertAutomation(
  db: Queryable,
  tenantId: string,
  id: string,
  body: CreateAutomationBody,
  at: Date,
): Promise<Automation> {
  await db.query(FOLLOW_FROM_HEAD, [tenantId]);
  const { rows } = await db.query<AutomationRow>(
    `INSERT INTO automations (tenant_id, id, name, from_address, trigger_event, steps, enabled, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $8, $7, $7) RETURNING ${COLUMNS}`,
    [
      tenantId,
      id,
      body.name,
      body.from ?? null,
      body.trigger.event,
      JSON.stringify(body.steps),
      at,
      body.enabled ?? true,
    ],
  );
  return (await toAutomations(db, tenantId, rows))[0]!;
}

export async function getAutomation(db: Queryable, tenantId: string, id: string): Promise<Automation | null> {
  const { rows } = await db.query<AutomationRow>(
    `SELECT ${COLUMNS} FROM automations WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return rows[0] ? (await toAutomations(db, tenantId, rows))[0]! : null;
}

/**
 * `PATCH /automations/:id`: the given fields; `steps` replaces the tree. Runs keep their position
 * (a path): one whose step no longer exists completes when it next moves. `enabled: false` starts
 * no further run; the runs going on finish.
 */
export async function updateAutomation(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: UpdateAutomationBody,
  at: Date,
): Promise<Automation | null> {
  const { rows } = await db.query<AutomationRow>(
    `UPDATE automations
        SET name = COALESCE($3, name), from_address = COALESCE($4, from_address),
            trigger_event = COALESCE($5, trigger_event), steps = COALESCE($6::jsonb, steps), updated_at = $7,
            enabled = COALESCE($8, enabled)
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [
      tenantId,
      id,
      patch.name ?? null,
      patch.from ?? null,
      patch.trigger?.event ?? null,
      patch.steps === undefined ? null : JSON.stringify(patch.steps),
      at,
      patch.enabled ?? null,
    ],
  );
  return rows[0] ? (await toAutomations(db, tenantId, rows))[0]! : null;
}

/** Deletes the automation and its runs (their steps already done stay done: mail sent is sent). */
export async function deleteAutomation(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const r = await db.query('DELETE FROM automations WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return (r.rowCount ?? 0) > 0;
}

export async function listAutomations(
  db: Queryable,
  tenantId: string,
  page: PageQuery,
): Promise<Page<Automation>> {
  const { rows, total } = await newestFirstPage<AutomationRow>(
    db,
    { table: 'automations', columns: COLUMNS },
    tenantId,
    pageWindow(page),
  );
  return { items: await toAutomations(db, tenantId, rows), total };
}

interface RunRow {
  id: string;
  automation_id: string;
  contact_id: string;
  email: string | null;
  state: AutomationRunState;
  stop_reason: string | null;
  position: string | null;
  waiting: 'delay' | 'event' | null;
  due_at: Date | null;
  steps_done: number;
  started_at: Date;
  updated_at: Date;
}

const toRun = (r: RunRow): AutomationRun => ({
  id: r.id,
  automationId: r.automation_id,
  contactId: r.contact_id,
  email: r.email,
  state: r.state,
  stopReason: r.stop_reason,
  position: r.position,
  waiting: r.waiting,
  dueAt: r.due_at?.toISOString() ?? null,
  stepsDone: r.steps_done,
  startedAt: r.started_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/** One page of an automation's runs, newest first, optionally of one state; null: no such automation. */
export async function listRuns(
  db: Queryable,
  tenantId: string,
  automationId: string,
  q: PageQuery & { state?: AutomationRunState | undefined },
): Promise<Page<AutomationRun> | null> {
  const { limit, offset } = pageWindow(q);
  const state = q.state ?? null;
  const [exists, count, list] = await Promise.all([
    db.query('SELECT 1 FROM automations WHERE tenant_id = $1 AND id = $2', [tenantId, automationId]),
    db.query<{ total: string }>(
      `SELECT count(*) AS total FROM automation_runs
        WHERE tenant_id = $1 AND automation_id = $2 AND ($3::text IS NULL OR state = $3)`,
      [tenantId, automationId, state],
    ),
    db.query<RunRow>(
      `SELECT r.id, r.automation_id, r.contact_id, ct.email, r.state, r.stop_reason, r.position, r.waiting,
              r.due_at, r.steps_done, r.started_at, r.updated_at
         FROM automation_runs r
         LEFT JOIN contacts ct ON ct.tenant_id = r.tenant_id AND ct.id = r.contact_id
        WHERE r.tenant_id = $1 AND r.automation_id = $2 AND ($3::text IS NULL OR r.state = $3)
        ORDER BY r.started_at DESC, r.id COLLATE "C" DESC LIMIT $4 OFFSET $5::bigint`,
      [tenantId, automationId, state, limit, offset],
    ),
  ]);
  if ((exists.rowCount ?? 0) === 0) return null;
  return { items: list.rows.map(toRun), total: Number(count.rows[0]?.total ?? 0) };
}

/**
 * Puts an event of a contact in the trigger inbox — only when something listens: an automation
 * it triggers or a run waiting for it (so contact writes of tenants without automations cost one
 * cheap statement). `ON CONFLICT DO NOTHING`: the same event id twice is one event.
 */
export async function recordAutomationEvent(
  db: Queryable,
  e: { tenantId: string; id: string; name: string; contactId: string; at: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO automation_inbox (tenant_id, id, name, contact_id, occurred_at)
     SELECT $1, $2, $3, $4, $5
      WHERE EXISTS (SELECT 1 FROM automations WHERE tenant_id = $1 AND trigger_event = $3 AND enabled)
         OR EXISTS (SELECT 1 FROM automation_runs WHERE tenant_id = $1 AND contact_id = $4 AND state = 'active'
                       AND waiting = 'event' AND wait_event = $3)
     ON CONFLICT (tenant_id, id) DO NOTHING`,
    [e.tenantId, e.id, e.name, e.contactId, e.at],
  );
}

/**
 * The same event of many contacts into the inbox in one statement (a CSV import's
 * `contact.created`), under the same condition as {@link recordAutomationEvent}: only when an
 * enabled automation triggers on it or a run of that contact waits for it.
 */
export async function recordAutomationEvents(
  db: Queryable,
  e: { tenantId: string; name: string; at: Date; events: readonly { id: string; contactId: string }[] },
): Promise<number> {
  if (e.events.length === 0) return 0;
  const r = await db.query(
    `INSERT INTO automation_inbox (tenant_id, id, name, contact_id, occurred_at)
     SELECT $1, u.id, $2, u.contact_id, $3
       FROM unnest($4::text[], $5::text[]) AS u(id, contact_id)
      WHERE EXISTS (SELECT 1 FROM automations WHERE tenant_id = $1 AND trigger_event = $2 AND enabled)
         OR EXISTS (SELECT 1 FROM automation_runs WHERE tenant_id = $1 AND contact_id = u.contact_id
                       AND state = 'active' AND waiting = 'event' AND wait_event = $2)
     ON CONFLICT (tenant_id, id) DO NOTHING`,
    [e.tenantId, e.name, e.at, e.events.map((x) => x.id), e.events.map((x) => x.contactId)],
  );
  return r.rowCount ?? 0;
}

export type TrackOutcome = { kind: 'no_contact' } | { kind: 'ok'; contactId: string };

/**
 * An event of the contact with this address, by name, into the inbox: a custom event of
 * `POST /events/track`, or an inbound message from the contact (`email.received`, SPEC §24).
 */
export async function recordContactEvent(
  db: Queryable,
  e: { tenantId: string; id: string; name: string; email: string; at: Date },
): Promise<TrackOutcome> {
  // Named (prepared once per connection): every inbound message asks it, mostly of a stranger.
  // Its generic plan is the (tenant_id, email) unique index's, whatever the table's statistics.
  const { rows } = await db.query<{ id: string }>({
    name: 'contact_id_by_email',
    text: 'SELECT id FROM contacts WHERE tenant_id = $1 AND email = $2',
    values: [e.tenantId, e.email.trim().toLowerCase()],
  });
  const contactId = rows[0]?.id;
  if (contactId === undefined) return { kind: 'no_contact' };
  await recordAutomationEvent(db, { tenantId: e.tenantId, id: e.id, name: e.name, contactId, at: e.at });
  return { kind: 'ok', contactId };
}

/**
 * `POST /events/track` (SPEC §27, §25), in the caller's transaction: the contact's custom event
 * into the trigger inbox and into the tenant's event stream (`GET /events`), where it reads
 * `{ id, cursor, type: <name>, timestamp, data: { tenantId, contactId, email, data } }`.
 */
export async function trackEvent(
  client: pg.ClientBase,
  e: { tenantId: string; id: string; name: string; email: string; data: Record<string, unknown>; at: Date },
): Promise<TrackOutcome> {
  const outcome = await recordContactEvent(client, e);
  if (outcome.kind === 'no_contact') return outcome;
  await appendContactEvents(client, e.tenantId, [
    {
      id: e.id,
      contactId: outcome.contactId,
      type: e.name,
      timestamp: e.at.toISOString(),
      data: { tenantId: e.tenantId, contactId: outcome.contactId, email: e.email, data: e.data },
    },
  ]);
  return outcome;
}
