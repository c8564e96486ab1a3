import { type EmailState, toLogEntry, utcDay } from '@tern/domain';
import type { PgReadModel, TenantScope } from './read-model.js';

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
export class LogCountDeltas {
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

/**
 * The log's counters (migrations 0040–0042): entries per (tenant, project, UTC day or hour,
 * status), kept in the transaction that changes the rows, so the logs query sums them exactly.
 * They hold no personal field: an erasure leaves them alone.
 */
export const logCounts: PgReadModel = {
  name: 'log counts',
  store: 'postgres',
  rebuild: 'truncate',
  tables: ['email_log_counts', 'email_log_hour_counts'],
  async apply(client, { folded }) {
    const counts = new LogCountDeltas();
    for (const { tenantId, before, after } of folded.emails)
      counts.move(tenantId, before ? counted(before) : null, counted(after));
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
  },
  /**
   * The days (and hours) before the cut-off's day. The logs query never reads them (it sums from
   * the cut-off day), so this is clean-up only.
   */
  async expire(client, scope: TenantScope, cutoff) {
    const cutoffDay = utcDay(cutoff.getTime());
    if ('tenantId' in scope) {
      const days = await client.query(
        'DELETE FROM email_log_counts WHERE tenant_id = $1 AND day < $2::date',
        [scope.tenantId, cutoffDay],
      );
      const hours = await client.query(
        `DELETE FROM email_log_hour_counts WHERE tenant_id = $1 AND hour < ($2::date)::timestamp AT TIME ZONE 'UTC'`,
        [scope.tenantId, cutoffDay],
      );
      return (days.rowCount ?? 0) + (hours.rowCount ?? 0);
    }
    const days = await client.query(
      'DELETE FROM email_log_counts WHERE day < $1::date AND NOT (tenant_id = ANY($2::text[]))',
      [cutoffDay, scope.allBut],
    );
    const hours = await client.query(
      `DELETE FROM email_log_hour_counts
        WHERE hour < ($1::date)::timestamp AT TIME ZONE 'UTC' AND NOT (tenant_id = ANY($2::text[]))`,
      [cutoffDay, scope.allBut],
    );
    return (days.rowCount ?? 0) + (hours.rowCount ?? 0);
  },
};
