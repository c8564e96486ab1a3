import { AUTOMATIC_SUPPRESSION_REASONS, type DeliveryEvent, ERASED_TEXT } from '@tern/contracts';
import {
  type AnalyticsDelta,
  aggregateDeltas,
  diffContributions,
  type EmailState,
  evolve,
  initialEmailState,
  normaliseTimestamp,
  normalizeMessageId,
  recipientOf,
  toLogEntry,
} from '@tern/domain';
import type { DeadLetter } from '@tern/event-log';
import { READ_MODEL_CHANNEL, readModelPayload } from '@tern/stores';
import type pg from 'pg';

export interface PgBatchResult {
  /** Events folded for the first time (duplicates excluded). */
  applied: number;
  duplicates: number;
  /** The outbox row written in the same transaction, to ship to ClickHouse; null when no figure moved. */
  outbox: { batchId: string; rows: AnalyticsDelta[] } | null;
}

/** What `email_log_counts` counts of an entry: its UTC day, status and project. */
interface Counted {
  createdAt: string;
  status: string;
  projectId: string | null;
}

/** `email_log_counts.project_id` of the rows over every project of the tenant (migration 0041). */
const ALL_PROJECTS = '';

/** `at`: the UTC day (`email_log_counts`) or the UTC hour (`email_log_hour_counts`, migration 0042). */
type CountRow = { tenantId: string; projectId: string; at: string; status: string; n: number };

/**
 * Changes of `email_log_counts` and `email_log_hour_counts` in one batch: an entry leaves its old
 * (day and hour, status, project) and joins its new one, in the rows over all projects and in its
 * project's rows. Only visible entries (`createdAt` known) count, as in the logs query.
 */
class LogCountDeltas {
  private readonly byKey = new Map<string, CountRow>();
  private readonly byHourKey = new Map<string, CountRow>();

  move(tenantId: string, before: Counted | null, after: Counted | null): void {
    if (
      before &&
      after &&
      before.status === after.status &&
      before.createdAt === after.createdAt &&
      before.projectId === after.projectId
    )
      return;
    if (before) this.add(tenantId, before, -1);
    if (after) this.add(tenantId, after, 1);
  }

  private add(tenantId: string, entry: Counted, n: number): void {
    const iso = new Date(entry.createdAt).toISOString();
    const day = iso.slice(0, 10);
    const hour = `${iso.slice(0, 13)}:00:00Z`;
    const { status } = entry;
    for (const projectId of entry.projectId === null ? [ALL_PROJECTS] : [ALL_PROJECTS, entry.projectId]) {
      bump(this.byKey, { tenantId, projectId, at: day, status, n });
      bump(this.byHourKey, { tenantId, projectId, at: hour, status, n });
    }
  }

  /** Non-zero day changes in key order: concurrent batches lock the counter rows in the same order. */
  rows(): CountRow[] {
    return sortedChanges(this.byKey);
  }

  /** The same for the hour counters. */
  hourRows(): CountRow[] {
    return sortedChanges(this.byHourKey);
  }
}

function bump(byKey: Map<string, CountRow>, change: CountRow): void {
  const key = `${change.tenantId}\u0000${change.projectId}\u0000${change.at}\u0000${change.status}`;
  const row = byKey.get(key);
  if (row) row.n += change.n;
  else byKey.set(key, change);
}

function sortedChanges(byKey: Map<string, CountRow>): CountRow[] {
  return [...byKey.entries()]
    .filter(([, row]) => row.n !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, row]) => row);
}

/** The counted view of an email, or null while it is not visible (no email.queued yet). */
function counted(state: EmailState): Counted | null {
  const entry = toLogEntry(state);
  if (entry === null) return null;
  return { createdAt: entry.createdAt, status: entry.status, projectId: state.queued?.projectId ?? null };
}

async function applyLogCounts(client: pg.PoolClient, counts: LogCountDeltas): Promise<void> {
  const days = counts.rows();
  const hours = counts.hourRows();
  if (days.length === 0 && hours.length === 0) return;
  const columns = (rows: CountRow[]) => [
    rows.map((r) => r.tenantId),
    rows.map((r) => r.projectId),
    rows.map((r) => r.at),
    rows.map((r) => r.status),
    rows.map((r) => r.n),
  ];
  // One round trip for both tables (a data-modifying CTE); each in its own key order.
  await client.query(
    `WITH days AS (
       INSERT INTO email_log_counts (tenant_id, project_id, day, status, n)
       SELECT * FROM unnest($1::text[], $2::text[], $3::date[], $4::text[], $5::bigint[])
       ON CONFLICT (tenant_id, project_id, day, status) DO UPDATE SET n = email_log_counts.n + EXCLUDED.n
     )
     INSERT INTO email_log_hour_counts (tenant_id, project_id, hour, status, n)
     SELECT * FROM unnest($6::text[], $7::text[], $8::timestamptz[], $9::text[], $10::bigint[])
     ON CONFLICT (tenant_id, project_id, hour, status) DO UPDATE SET n = email_log_hour_counts.n + EXCLUDED.n`,
    [...columns(days), ...columns(hours)],
  );
}

const emailKey = (tenantId: string, emailId: string) => `${tenantId}\u0000${emailId}`;

/** The (message id, email) pairs of a batch's `email.sent` events: the Message-ID and the relay's id. */
export function providerMessageIds(
  events: readonly DeliveryEvent[],
): { messageId: string; tenantId: string; emailId: string; sentAt: string }[] {
  const out: { messageId: string; tenantId: string; emailId: string; sentAt: string }[] = [];
  for (const e of events) {
    if (e.type !== 'email.sent') continue;
    for (const raw of [e.data.messageId, e.data.providerMessageId]) {
      const messageId = raw === undefined ? '' : normalizeMessageId(raw);
      if (messageId !== '')
        out.push({ messageId, tenantId: e.tenantId, emailId: e.emailId, sentAt: e.occurredAt });
    }
  }
  return out;
}

/** A suppression the projection adds on its own (SPEC §13). */
interface AutomaticSuppression {
  tenantId: string;
  email: string;
  reason: string;
  source: 'bounce' | 'complaint';
}

/**
 * What an email's change puts on its tenant's suppression list: its recipient, the first time
 * the email is known (queued) and hard-bounced, or complained about. Only on that transition, so
 * an address a user removed is not put back by a later event of the same email (an open, a
 * second complaint). States stored before `hardBounced` existed read it as false.
 */
export function newSuppressions(before: EmailState | null, after: EmailState): AutomaticSuppression[] {
  // An erased recipient (null) is suppressed by its keyed hash already (erased_recipients).
  const email = after.queued?.toEmail?.toLowerCase();
  if (email === undefined) return [];
  const known = before?.queued != null;
  const out: AutomaticSuppression[] = [];
  const { tenantId } = after;
  if (after.hardBounced && !(known && before?.hardBounced === true)) {
    out.push({ tenantId, email, reason: AUTOMATIC_SUPPRESSION_REASONS.bounce, source: 'bounce' });
  }
  const unnamed = (s: EmailState | null | undefined) =>
    (s?.complaintCount ?? 0) - (s?.namedComplaintCount ?? 0);
  if (unnamed(after) > 0 && !(known && unnamed(before) > 0)) {
    out.push({ tenantId, email, reason: AUTOMATIC_SUPPRESSION_REASONS.complaint, source: 'complaint' });
  }
  return out;
}

/**
 * What freshly applied outcomes of ONE recipient of several put on the suppression list (SPEC
 * §22): the named address of a hard bounce or a complaint. A redelivered event is not applied
 * again, so it adds nothing twice; an erased recipient (`[erased]`) adds nothing (its keyed hash
 * suppresses it already).
 */
export function namedSuppressions(applied: readonly DeliveryEvent[]): AutomaticSuppression[] {
  const out: AutomaticSuppression[] = [];
  for (const e of applied) {
    const email = recipientOf(e);
    if (email === undefined || email === ERASED_TEXT) continue;
    if (e.type === 'email.bounced' && e.data.bounceType === 'hard')
      out.push({
        tenantId: e.tenantId,
        email: email.toLowerCase(),
        reason: AUTOMATIC_SUPPRESSION_REASONS.bounce,
        source: 'bounce',
      });
    else if (e.type === 'email.complained')
      out.push({
        tenantId: e.tenantId,
        email: email.toLowerCase(),
        reason: AUTOMATIC_SUPPRESSION_REASONS.complaint,
        source: 'complaint',
      });
  }
  return out;
}

/** SPEC §21: this many soft bounces of one address within {@link SOFT_BOUNCE_WINDOW_MS} suppress it. */
export const SOFT_BOUNCE_LIMIT = 3;
export const SOFT_BOUNCE_WINDOW_MS = 7 * 86_400_000;

/** True when some window of `windowMs` holds `limit` of these instants. */
export function denseEnough(instants: readonly number[], limit: number, windowMs: number): boolean {
  const sorted = [...instants].sort((a, b) => a - b);
  for (let i = 0; i + limit - 1 < sorted.length; i++) {
    if (sorted[i + limit - 1]! - sorted[i]! <= windowMs) return true;
  }
  return false;
}

/**
 * The soft-bounce rule (SPEC §21): every freshly applied `email.bounced { bounceType: "soft" }`
 * of a known recipient is one row of `soft_bounces` (the event id keeps a redelivery one row);
 * an address with {@link SOFT_BOUNCE_LIMIT} of them within 7 days of one of this batch's
 * (before or after it: events may arrive late) is suppressed with reason `soft_bounce`.
 */
async function softBounceSuppressions(
  client: pg.PoolClient,
  applied: readonly DeliveryEvent[],
  byEmail: ReadonlyMap<string, DeliveryEvent[]>,
  updates: readonly Record<string, unknown>[],
): Promise<AutomaticSuppression[]> {
  const softs = applied.filter(
    (e) => e.type === 'email.bounced' && e.data.bounceType === 'soft' && recipientOf(e) !== ERASED_TEXT,
  );
  if (softs.length === 0) return [];
  const toOf = new Map<string, string>();
  for (const u of updates) {
    const state = u.state as EmailState;
    const to = state.queued?.toEmail;
    if (to) toOf.set(emailKey(state.tenantId, state.emailId), to.toLowerCase());
  }
  const rows = softs.flatMap((e) => {
    const email = recipientOf(e)?.toLowerCase() ?? toOf.get(emailKey(e.tenantId, e.emailId));
    return email && byEmail.has(emailKey(e.tenantId, e.emailId))
      ? [{ t: e.tenantId, e: email, id: e.id, at: normaliseTimestamp(e.occurredAt) }]
      : [];
  });
  if (rows.length === 0) return [];
  await client.query(
    `INSERT INTO soft_bounces (tenant_id, email, event_id, occurred_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
     ON CONFLICT DO NOTHING`,
    [rows.map((r) => r.t), rows.map((r) => r.e), rows.map((r) => r.id), rows.map((r) => r.at)],
  );
  const { rows: seen } = await client.query<{ tenant_id: string; email: string; at: Date }>(
    `SELECT DISTINCT s.tenant_id, s.email, s.event_id, s.occurred_at AS at
       FROM soft_bounces s
       JOIN unnest($1::text[], $2::text[], $3::timestamptz[]) AS x(t, e, at)
         ON s.tenant_id = x.t AND s.email = x.e
        AND s.occurred_at BETWEEN x.at - $4::interval AND x.at + $4::interval`,
    [
      rows.map((r) => r.t),
      rows.map((r) => r.e),
      rows.map((r) => r.at),
      `${SOFT_BOUNCE_WINDOW_MS} milliseconds`,
    ],
  );
  const instants = new Map<string, { tenantId: string; email: string; at: number[] }>();
  for (const r of seen) {
    const k = emailKey(r.tenant_id, r.email);
    const entry = instants.get(k) ?? { tenantId: r.tenant_id, email: r.email, at: [] as number[] };
    entry.at.push(r.at.getTime());
    instants.set(k, entry);
  }
  return [...instants.values()]
    .filter((x) => denseEnough(x.at, SOFT_BOUNCE_LIMIT, SOFT_BOUNCE_WINDOW_MS))
    .map((x) => ({
      tenantId: x.tenantId,
      email: x.email,
      reason: AUTOMATIC_SUPPRESSION_REASONS.softBounce,
      source: 'bounce' as const,
    }));
}

/**
 * Folds one batch into Postgres in ONE transaction: claims the event ids by writing their
 * timeline rows (a duplicate changes nothing), locks and loads the affected emails, folds, writes
 * the rows, writes the analytics deltas to the outbox and any dead letters. Either all of it is
 * committed or none.
 */
export async function applyBatchToPostgres(
  pool: pg.Pool,
  events: readonly DeliveryEvent[],
  deadLetters: readonly DeadLetter[],
  newBatchId: () => string,
): Promise<PgBatchResult> {
  const client = await pool.connect();
  const lost = watchConnection(client);
  try {
    await client.query('BEGIN');
    const result = await applyInTransaction(client, events, deadLetters, newBatchId);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    lost.release();
  }
}

async function applyInTransaction(
  client: pg.PoolClient,
  events: readonly DeliveryEvent[],
  deadLetters: readonly DeadLetter[],
  newBatchId: () => string,
): Promise<PgBatchResult> {
  if (deadLetters.length > 0) {
    await client.query(
      `INSERT INTO dead_letters (source, payload, reason, payload_hash)
       SELECT 'projector', p, r, encode(sha256(convert_to(p, 'UTF8')), 'hex')
         FROM unnest($1::text[], $2::text[]) AS d(p, r)
       ON CONFLICT (source, payload_hash) DO NOTHING`,
      [deadLetters.map((d) => d.payload), deadLetters.map((d) => d.reason)],
    );
  }
  // Same id twice in one batch counts once, as across batches.
  const unique = new Map<string, DeliveryEvent>();
  for (const e of events)
    if (!unique.has(emailKey(e.tenantId, e.id))) unique.set(emailKey(e.tenantId, e.id), e);
  if (unique.size === 0) return { applied: 0, duplicates: events.length, outbox: null };

  const candidates = [...unique.values()];
  const claimed = await claimIntoTimeline(client, candidates);
  const fresh = new Set(claimed.rows.map((r) => emailKey(r.tenant_id, r.event_id)));
  const toApply = candidates.filter((e) => fresh.has(emailKey(e.tenantId, e.id)));
  if (toApply.length === 0) return { applied: 0, duplicates: events.length, outbox: null };

  const byEmail = new Map<string, DeliveryEvent[]>();
  for (const e of toApply) {
    const k = emailKey(e.tenantId, e.emailId);
    const list = byEmail.get(k);
    if (list) list.push(e);
    else byEmail.set(k, [e]);
  }
  const emails = [...byEmail.values()].map((list) => ({
    tenantId: list[0]!.tenantId,
    emailId: list[0]!.emailId,
  }));
  emails.sort((a, b) =>
    a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.emailId < b.emailId ? -1 : 1,
  );
  const tenants = emails.map((e) => e.tenantId);
  const ids = emails.map((e) => e.emailId);

  // Placeholder rows (version 0) so that every affected email can be row-locked, even new ones.
  await client.query(
    `INSERT INTO email_logs (tenant_id, id, state, version)
     SELECT t, i, '{}'::jsonb, 0 FROM unnest($1::text[], $2::text[]) AS u(t, i)
     ON CONFLICT DO NOTHING`,
    [tenants, ids],
  );
  const current = await client.query<{
    tenant_id: string;
    id: string;
    state: EmailState | Record<string, never>;
    version: number;
  }>(
    `SELECT e.tenant_id, e.id, e.state, e.version
       FROM email_logs e
       JOIN unnest($1::text[], $2::text[]) AS u(t, i) ON e.tenant_id = u.t AND e.id = u.i
      ORDER BY e.tenant_id, e.id
      FOR UPDATE OF e`,
    [tenants, ids],
  );
  const before = new Map<string, EmailState | null>();
  for (const row of current.rows) {
    before.set(emailKey(row.tenant_id, row.id), row.version === 0 ? null : (row.state as EmailState));
  }

  const updates: Record<string, unknown>[] = [];
  const deltas: AnalyticsDelta[] = [];
  const counts = new LogCountDeltas();
  const suppressions: AutomaticSuppression[] = [];
  for (const { tenantId, emailId } of emails) {
    const k = emailKey(tenantId, emailId);
    const previous = before.get(k) ?? null;
    let state = previous ?? initialEmailState(tenantId, emailId);
    for (const event of byEmail.get(k) ?? []) state = evolve(state, event);
    deltas.push(...diffContributions(previous, state));
    suppressions.push(...newSuppressions(previous, state));
    const entry = toLogEntry(state);
    counts.move(tenantId, previous ? counted(previous) : null, counted(state));
    updates.push({
      tenant_id: tenantId,
      id: emailId,
      to_email: entry?.toEmail ?? null,
      subject: entry?.subject ?? null,
      status: entry?.status ?? null,
      provider: entry?.provider ?? null,
      message_id: entry?.messageId ?? null,
      template_id: state.queued?.templateId ?? null,
      project_id: state.queued?.projectId ?? null,
      tags: entry?.tags ?? [],
      created_at: entry?.createdAt ?? null,
      state,
    });
  }
  await client.query(
    `UPDATE email_logs e
        SET to_email = u.to_email, subject = u.subject, status = u.status, provider = u.provider,
            message_id = u.message_id, template_id = u.template_id, tags = u.tags,
            created_at = u.created_at, state = u.state, version = e.version + 1, updated_at = now(),
            project_id = u.project_id
       FROM jsonb_to_recordset($1::jsonb) AS u(tenant_id text, id text, to_email text, subject text,
            status text, provider text, message_id text, template_id text, tags jsonb,
            created_at timestamptz, state jsonb, project_id text)
      WHERE e.tenant_id = u.tenant_id AND e.id = u.id`,
    [JSON.stringify(updates)],
  );

  await applyLogCounts(client, counts);

  suppressions.push(...namedSuppressions(toApply));
  suppressions.push(...(await softBounceSuppressions(client, toApply, byEmail, updates)));
  // The ids a provider's notification names the email by (SPEC §21): from every fresh email.sent.
  const sentIds = providerMessageIds(toApply);
  if (sentIds.length > 0) {
    await client.query(
      `INSERT INTO provider_messages (message_id, tenant_id, email_id, sent_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
       ON CONFLICT DO NOTHING`,
      [
        sentIds.map((x) => x.messageId),
        sentIds.map((x) => x.tenantId),
        sentIds.map((x) => x.emailId),
        sentIds.map((x) => x.sentAt),
      ],
    );
  }

  if (suppressions.length > 0) {
    // In this transaction, and never twice (ON CONFLICT): a redelivered or replayed batch adds
    // nothing, and an address already listed (by hand or earlier) keeps its entry.
    await client.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source)
       SELECT t, lower(e), r, s FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(t, e, r, s)
       ON CONFLICT (tenant_id, email) DO NOTHING`,
      [
        suppressions.map((x) => x.tenantId),
        suppressions.map((x) => x.email),
        suppressions.map((x) => x.reason),
        suppressions.map((x) => x.source),
      ],
    );
  }

  const rows = aggregateDeltas(deltas);
  let outbox: PgBatchResult['outbox'] = null;
  if (rows.length > 0) {
    outbox = { batchId: newBatchId(), rows };
    await client.query('INSERT INTO analytics_outbox (batch_id, rows) VALUES ($1, $2::jsonb)', [
      outbox.batchId,
      JSON.stringify(rows),
    ]);
  }
  const newest = toApply.reduce((max, e) => Math.max(max, Date.parse(e.occurredAt)), 0);
  // The batch's progress, and its notice to the api processes (delivered at commit): these
  // tenants' log entries changed, as of this `last_batch_at` (packages/stores read-model-feed).
  await client.query(
    `WITH status AS (
       INSERT INTO projection_status (name, last_event_at, last_batch_at, events_total)
       VALUES ('projector', $1, now(), $2)
       ON CONFLICT (name) DO UPDATE
          SET last_event_at = GREATEST(projection_status.last_event_at, EXCLUDED.last_event_at),
              last_batch_at = now(),
              events_total = projection_status.events_total + EXCLUDED.events_total
       RETURNING last_batch_at
     )
     SELECT pg_notify($3, jsonb_set($4::jsonb, '{asOf}', to_jsonb((SELECT last_batch_at FROM status)))::text)`,
    [
      new Date(newest).toISOString(),
      toApply.length,
      READ_MODEL_CHANNEL,
      readModelPayload({ kind: 'logs', tenants: emails.map((e) => e.tenantId) }),
    ],
  );
  return { applied: toApply.length, duplicates: events.length - toApply.length, outbox };
}

/**
 * Dead-letters one event Postgres refused (and any parse dead letters of its batch) and claims
 * its id in the same transaction: a redelivery of it is then a known duplicate, never retried.
 */
export async function deadLetterEvent(
  pool: pg.Pool,
  event: DeliveryEvent | undefined,
  letters: readonly DeadLetter[],
): Promise<void> {
  const client = await pool.connect();
  const lost = watchConnection(client);
  try {
    await client.query('BEGIN');
    if (letters.length > 0) {
      await client.query(
        `INSERT INTO dead_letters (source, payload, reason, payload_hash)
         SELECT 'projector', p, r, encode(sha256(convert_to(p, 'UTF8')), 'hex')
           FROM unnest($1::text[], $2::text[]) AS d(p, r)
         ON CONFLICT (source, payload_hash) DO NOTHING`,
        [letters.map((d) => d.payload), letters.map((d) => d.reason)],
      );
    }
    if (event) {
      await client.query(
        'INSERT INTO processed_events (tenant_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [event.tenantId, event.id],
      );
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    lost.release();
  }
}

/**
 * Hears a checked-out client losing its connection between two queries (a Postgres restart
 * while a batch is folded): without a listener the 'error' event would crash the process. The
 * broken client is handed back with the error, so the pool drops it instead of reusing it.
 */
function watchConnection(client: pg.PoolClient): { release(): void } {
  let lost: Error | undefined;
  const onError = (error: Error) => {
    lost = error;
  };
  client.on('error', onError);
  return {
    release() {
      client.off('error', onError);
      client.release(lost);
    },
  };
}

/**
 * Claims the events and writes the timeline of `GET /emails/:id` (SPEC §11) in one statement: an
 * event id already in `email_events` (folded before) or in `processed_events` (dead-lettered) is
 * not inserted, and only the ids inserted here come back — the events to fold (migration 0095).
 * Concurrent batches holding the same id wait on each other's unique index entry; one wins.
 */
async function claimIntoTimeline(
  client: pg.PoolClient,
  events: readonly DeliveryEvent[],
): Promise<pg.QueryResult<{ tenant_id: string; event_id: string }>> {
  return client.query<{ tenant_id: string; event_id: string }>(
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
}
