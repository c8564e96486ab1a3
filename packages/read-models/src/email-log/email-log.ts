import { type EmailGroup, type EmailState, emailKey, type FoldedEmail, toLogEntry } from '@tern/domain';
import type pg from 'pg';
import type { EmailContentTable, PgReadModel } from '../read-model.js';
import { amongIds, dropExpiredLogDays, ensureLogDays } from './days.js';
import { tenantsWith } from './loose-scan.js';
import { fullStateSql, type LogColumns, storedState } from './stored-state.js';

/**
 * The email log (SPEC §7): one row per email (`email_logs`), the query columns of its log entry
 * next to its fold state. Written only by the projector; read through this module's queries.
 */
export const emailLog: PgReadModel = {
  name: 'email log',
  store: 'postgres',
  rebuild: 'truncate',
  tables: ['email_logs'],
  days: { ensure: ensureLogDays, dropExpired: dropExpiredLogDays },
  async apply(client, { folded }) {
    // One statement for the batch (issue 45): an email folded before (its row locked by
    // `lockEmails`) is updated; a new one is inserted as it ends the batch, never as a placeholder
    // then updated. `fresh` (1): the row was not there when the batch locked; if a concurrent
    // batch inserted it meanwhile, the row is left alone and the batch fails as a serialisation
    // failure (retried). `fresh` is also the inserted version: 0 marks a locked row (never
    // inserted). A version-0 row (a placeholder an older projector committed) is taken over.
    const rows = logRows(folded.emails).map((r, i) => ({
      ...r,
      fresh: folded.emails[i]!.before === null ? 1 : 0,
    }));
    const r = await client.query(
      `INSERT INTO email_logs AS e (tenant_id, id, to_email, subject, status, provider, message_id, template_id,
                                    tags, created_at, state, version, updated_at, project_id)
       SELECT u.tenant_id, u.id, u.to_email, u.subject, u.status, u.provider, u.message_id, u.template_id,
              u.tags, u.created_at, u.state, u.fresh, now(), u.project_id
         FROM jsonb_to_recordset($1::jsonb) AS u(tenant_id text, id text, to_email text, subject text,
              status text, provider text, message_id text, template_id text, tags jsonb,
              created_at timestamptz, state jsonb, project_id text, fresh int)
       ON CONFLICT (tenant_id, id) DO UPDATE
          SET to_email = EXCLUDED.to_email, subject = EXCLUDED.subject, status = EXCLUDED.status,
              provider = EXCLUDED.provider, message_id = EXCLUDED.message_id,
              template_id = EXCLUDED.template_id, tags = EXCLUDED.tags, created_at = EXCLUDED.created_at,
              state = EXCLUDED.state, version = e.version + 1, updated_at = now(), project_id = EXCLUDED.project_id
        WHERE EXCLUDED.version = 0 OR e.version = 0`,
      [JSON.stringify(rows)],
    );
    if ((r.rowCount ?? 0) < rows.length)
      throw Object.assign(new Error('email_logs: a new email was folded by a concurrent batch; retrying'), {
        code: '40001',
      });
  },
  async eraseRecipient(client, { tenantId, emailIds }) {
    const r = await client.query(
      `UPDATE email_logs
          SET to_email = NULL, subject = NULL, version = version + 1,
              state = CASE WHEN jsonb_typeof(state->'queued') = 'object'
                           THEN jsonb_set(state, '{queued}', (state->'queued') - 'toEmail' - 'subject')
                           ELSE state END
        WHERE tenant_id = $1 AND id = ANY($2::text[])
          AND (to_email IS NOT NULL OR subject IS NOT NULL
               OR state->'queued'->'toEmail' <> 'null'::jsonb OR state->'queued'->'subject' <> 'null'::jsonb)`,
      [tenantId, emailIds],
    );
    return { emails: r.rowCount ?? 0 };
  },
};

/**
 * The `email_logs` rows of folded emails: the log entry's query columns and what else of the fold
 * state there is to keep (`storedState`; read whole through `fullStateSql`).
 */
export function logRows(emails: readonly FoldedEmail[]): Record<string, unknown>[] {
  return emails.map(({ tenantId, emailId, after: state }) => {
    const entry = toLogEntry(state);
    const columns: LogColumns = {
      to_email: entry?.toEmail ?? null,
      subject: entry?.subject ?? null,
      status: entry?.status ?? null,
      provider: entry?.provider ?? null,
      message_id: entry?.messageId ?? null,
      template_id: state.queued?.templateId ?? null,
      project_id: state.queued?.projectId ?? null,
      tags: entry?.tags ?? [],
    };
    return {
      tenant_id: tenantId,
      id: emailId,
      ...columns,
      created_at: entry?.createdAt ?? null,
      state: storedState(state, columns),
    };
  });
}

/**
 * A reprojection's hand-over (services/projector/src/reproject.ts): sets the classification the
 * replay gave each email (`state.dims`: provider, client, device, bounce category, deferred) into
 * its stored state where it differs, so the live fold's next delta for the email starts from the
 * row the new rollup version holds. Counts the states changed.
 */
export async function writeBackDims(client: pg.ClientBase, states: Iterable<EmailState>): Promise<number> {
  let changed = 0;
  let chunk: EmailState[] = [];
  const flush = async () => {
    if (chunk.length === 0) return;
    const r = await client.query(
      `UPDATE email_logs e SET state = jsonb_set(e.state, '{dims}', u.d)
         FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS u(t, i, d)
        WHERE e.tenant_id = u.t AND e.id = u.i AND ${amongIds('e', '$2')} AND e.version > 0
          AND e.state->'dims' IS DISTINCT FROM u.d`,
      [chunk.map((x) => x.tenantId), chunk.map((x) => x.emailId), chunk.map((x) => JSON.stringify(x.dims))],
    );
    changed += r.rowCount ?? 0;
    chunk = [];
  };
  for (const state of states) {
    if (state.dims === undefined) continue;
    chunk.push(state);
    if (chunk.length >= 5000) await flush();
  }
  await flush();
  return changed;
}

/**
 * Locks the batch's emails that have a row, in (tenant, email) order, and answers their stored
 * states (null: never folded). A new email has no row to lock: `emailLog.apply` inserts it, and a
 * concurrent batch that inserted it first makes this batch fail and retry.
 */
export async function lockEmails(
  client: pg.ClientBase,
  emails: readonly Pick<EmailGroup, 'tenantId' | 'emailId'>[],
): Promise<Map<string, EmailState | null>> {
  const tenants = emails.map((e) => e.tenantId);
  const ids = emails.map((e) => e.emailId);
  const current = await client.query<{
    tenant_id: string;
    id: string;
    state: EmailState | Record<string, never>;
    version: number;
  }>(
    `SELECT e.tenant_id, e.id, ${fullStateSql('e')} AS state, e.version
       FROM email_logs e
       JOIN unnest($1::text[], $2::text[]) AS u(t, i) ON e.tenant_id = u.t AND e.id = u.i
      WHERE ${amongIds('e', '$2')}
      ORDER BY e.tenant_id, e.id
      FOR UPDATE OF e`,
    [tenants, ids],
  );
  const before = new Map<string, EmailState | null>();
  for (const row of current.rows) {
    before.set(emailKey(row.tenant_id, row.id), row.version === 0 ? null : (row.state as EmailState));
  }
  return before;
}

/** The tenant's emails to this address (lowercased) by their log entry. */
export async function emailIdsTo(
  client: pg.ClientBase,
  tenantId: string,
  address: string,
): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    'SELECT id FROM email_logs WHERE tenant_id = $1 AND lower(to_email) = $2',
    [tenantId, address],
  );
  return rows.map((r) => r.id);
}

/**
 * Retention of the log (SPEC §9), as SQL the retention job runs batch by batch; `$1` tenant, `$2`
 * cut-off, `$3` batch size. `sendNotFinal(alias, id)` is the sending side's test of a send not
 * yet done (packages/sending): such an email keeps its rows.
 */
export interface LogExpirySql {
  /** Tenants that have log rows (a loose index scan): `SELECT tenant_id`. */
  tenants: string;
  /** The ids of a batch of expired emails (`$3` of them at most): `SELECT id`. */
  expiredIds: string;
  /**
   * Those emails (`$3`: the ids `expiredIds` answered, in the same transaction) with their rows in
   * every content table: answers `n` and `content`.
   */
  expiredEmails: string;
  /** A batch of a content table's rows older than the cut-off whose log row is already gone. */
  orphans(t: EmailContentTable): string;
  /** Tenants that have rows of a content table to look at. */
  tenantsOf(t: EmailContentTable): string;
}

export function logExpirySql(
  content: readonly EmailContentTable[],
  sendNotFinal: (alias: string, id: string) => string,
  sendTable: string,
): LogExpirySql {
  const andOnly = (t: EmailContentTable) => (t.only === null ? '' : `AND ${t.only}`);
  /**
   * True for a visible email (created at or after the cut-off `$2`): a probe of the log's primary
   * key per row. A scalar subquery rather than `NOT EXISTS`, which the planner may turn into a
   * hash of every visible entry of the tenant, for each batch.
   */
  const visible = (alias: string, id: string) =>
    `coalesce((SELECT l.created_at >= $2 FROM email_logs l
              WHERE l.tenant_id = ${alias}.tenant_id AND l.id = ${alias}.${id}), false)`;
  return {
    tenants: tenantsWith('email_logs', 'x.created_at IS NOT NULL'),
    tenantsOf: (t) => tenantsWith(t.table, t.only ?? 'true'),
    /** A range of the `(tenant_id, created_at)` index, through every day of the log. */
    expiredIds: `
    SELECT e.id FROM email_logs e
     WHERE e.tenant_id = $1 AND e.created_at IS NOT NULL AND e.created_at < $2
       AND NOT ${sendNotFinal('e', 'id')}
     LIMIT $3`,
    /**
     * A batch of a tenant's expired emails: their log rows and, in the same statement, their rows
     * in every content table, found by email id through the `gone` rows, so no moment shows one
     * without the other. The log rows go by key, their ids a parameter (`amongIds`): Postgres
     * prunes the delete to the days of those ids while it plans (as a subquery's array, the ids
     * were probed in every day of the log: 94 × the batch's probes at the default retention); the
     * delete checks again that each is expired. The ids go to each content delete as an array, an
     * index probe per id (led by `(tenant_id, email id)`) whatever the planner guesses of the
     * batch's size, never a scan of the table. An event the projector commits for an email while
     * this statement deletes it is not in the statement's snapshot: the sweep takes it once older
     * than the cut-off. Not by `ctid`: in the partitioned log a `ctid` names a row only within one
     * partition.
     */
    expiredEmails: `
    WITH gone AS (
      DELETE FROM email_logs d
       WHERE d.tenant_id = $1 AND ${amongIds('d', '$3')}
         AND d.created_at IS NOT NULL AND d.created_at < $2 AND NOT ${sendNotFinal('d', 'id')}
      RETURNING d.id AS id
    ),
    ${content
      .map(
        (t, i) => `c${i} AS (
      DELETE FROM ${t.table} x
       WHERE x.tenant_id = $1 AND x.${t.id} = ANY (ARRAY(SELECT id FROM gone)) ${andOnly(t)}
      RETURNING 1
    )`,
      )
      .join(',\n    ')}
    SELECT (SELECT count(*) FROM gone)::int AS n,
           (${content.map((_, i) => `(SELECT count(*) FROM c${i})`).join(' + ')})::int AS content`,
    /**
     * Rows of a tenant (`$1`) older than its cut-off (`$2`) whose log row is already gone: left by
     * an earlier version of the job (which took the log rows of sends still due, whose outcome
     * came later), or written after their email was deleted (a late open or complaint). Never a
     * visible email's row (an event posted from outside may predate its email's `createdAt`), nor
     * a send's that is not final.
     */
    orphans: (t) => `
    WITH gone AS (
      DELETE FROM ${t.table} WHERE ctid IN (
        SELECT x.ctid FROM ${t.table} x
         WHERE x.tenant_id = $1 AND x.${t.at} < $2 ${andOnly(t)}
           AND NOT ${visible('x', t.id)}
           ${t.table === sendTable ? '' : `AND NOT ${sendNotFinal('x', t.id)}`}
         LIMIT $3)
      RETURNING 1
    )
    SELECT count(*)::int AS n, count(*)::int AS content FROM gone`,
  };
}
