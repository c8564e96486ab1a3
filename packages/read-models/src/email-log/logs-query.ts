import {
  type EmailLogEntry,
  type EmailStatus,
  OCCURRED_AT_MAX_MS,
  OCCURRED_AT_MIN_MS,
} from '@tern/contracts';
import { preparedName } from '@tern/stores';
import type pg from 'pg';

/**
 * A keyset position of the log (SPEC §19): the position after the last entry of a page — its
 * `createdAt` at Postgres' microsecond precision (UTC, no zone) and its id — and the number of
 * the page it opens (services/api encodes it as the opaque `cursor`).
 */
export interface LogsCursor {
  /** `created_at` of the last entry shown, `YYYY-MM-DDTHH:MM:SS.ffffff` in UTC. */
  createdAt: string;
  /** `id` of the last entry shown. */
  id: string;
  /** The page the cursor opens (1-based). */
  page: number;
}

/**
 * The delivery log's reads (SPEC §7, §19) at a cost that does not grow with the tenant:
 *
 * - every page walks `email_logs_tenant_order_idx` (or the status or project one) in the log's
 *   order, so no query sorts and none scans the table;
 * - `meta.total` without `tag`/`q`/`templateId`/`from`/`to` is Σ `email_log_counts` over the days from the
 *   retention cut-off (≤ days × statuses rows), exact because the projector keeps the counters in
 *   the transaction that changes the rows;
 * - a deep `page` without those filters starts at the right hour: the same counters say how many
 *   entries are newer than each day, the hour counters (`email_log_hour_counts`) the same within
 *   that day, so the index walk skips whole days and hours and only steps over one hour's entries;
 * - a `cursor` is a keyset position: one index descent whatever the depth.
 *
 * With `tag`, `q`, `templateId`, `from` or `to`, the total is an exact `count(*)` over the index range, costing
 * one index entry per entry in the range (the retention window, narrowed by `from`/`to` and
 * `status`), and a `page` steps over (page − 1) × limit matching entries; a cursor stays constant.
 *
 * Total and page come from ONE statement, so they see the same snapshot.
 */

export interface LogsFilter {
  status?: EmailStatus;
  /** Inclusive bounds on `createdAt`, ISO 8601. */
  from?: string;
  to?: string;
  /** Entries whose tags include this one. */
  tag?: string;
  /** Recipient address, exact or prefix, case-insensitive. */
  q?: string;
  /** Entries of this project (SPEC §16). */
  projectId?: string;
  /** Entries rendered from this template (its id). */
  templateId?: string;
}

export interface LogsPageQuery {
  tenantId: string;
  /** Retention cut-off: the start of a UTC day. */
  cutoff: Date;
  limit: number;
  filter: LogsFilter;
  /** Either a page number (SPEC §7) or a cursor (SPEC §19); the cursor wins. */
  page: number;
  cursor: LogsCursor | null;
  /** Offsets below this are walked entry by entry, not guided by the counters (default 200). */
  shortWalk?: bigint;
}

export interface LogsPageResult {
  entries: EmailLogEntry[];
  total: number;
  /** Position after the last entry, when more entries follow. */
  next: LogsCursor | null;
  /** The page served: `page`, or the cursor's. */
  page: number;
}

type LogRow = {
  total: string;
  id: string | null;
  to_email: string | null;
  subject: string | null;
  status: EmailStatus;
  provider: string | null;
  message_id: string | null;
  created_at: Date;
  tags: unknown;
  opened: boolean;
  clicked: boolean;
  complained: boolean;
  ck: string;
};

const toEntry = (r: LogRow): EmailLogEntry => ({
  id: r.id ?? '',
  // null once the recipient was erased (SPEC §14).
  toEmail: r.to_email,
  subject: r.subject,
  status: r.status,
  provider: r.provider,
  messageId: r.message_id,
  createdAt: r.created_at.toISOString(),
  tags: Array.isArray(r.tags) ? r.tags.filter((t): t is string => typeof t === 'string') : [],
  opened: r.opened,
  clicked: r.clicked,
  complained: r.complained,
});

const COLUMNS = `e.id, e.to_email, e.subject, e.status, e.provider, e.message_id, e.created_at, e.tags, e.state,
       to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS ck`;
/**
 * The page's columns over the inner rows `p`: the engagement flags are read from the fold state
 * here, outside the LIMIT/OFFSET, so that rows stepped over are never detoasted.
 */
const PAGE = `p.id, p.to_email, p.subject, p.status, p.provider, p.message_id, p.created_at, p.tags, p.ck,
       COALESCE((p.state->>'openCount')::int, 0) > 0 AS opened,
       COALESCE((p.state->>'clickCount')::int, 0) > 0 AS clicked,
       COALESCE((p.state->>'complaintCount')::int, 0) > 0 AS complained`;
/** The log's order; matches the indexes of migration 0040 column for column. */
const ORDER = 'ORDER BY e.created_at DESC, e.id COLLATE "C" DESC';

/**
 * Below this offset a page steps over the entries (their rows) directly: cheaper than summing the
 * counters per day to find the right day (≈ 0.5 ms of aggregation and window over days × statuses
 * rows), and it is the common case (the first pages).
 */
const SHORT_WALK = 200n;

/**
 * The rows a first page fetches, written into its statement as a number, not a parameter: its
 * limit and one more (whether another page follows), rounded up to one of a few sizes (the surplus
 * is not shown), so a few texts serve every limit. With the row count (or an OFFSET) a parameter,
 * Postgres costs a named statement's generic plan for a tenth of the rows, finds it dearer than
 * the plans made with the values, and plans the first page anew at every request; across the
 * log's day partitions that planning was most of the page (docs/deploy.md, "A log partitioned by
 * day"). A first page has no OFFSET for the same reason.
 */
const FETCH_SIZES = [11, 21, 51, 101] as const;
function fetchSize(limit: number): number {
  if (!(Number.isInteger(limit) && limit >= 1)) throw new Error(`not a page limit: ${limit}`);
  return FETCH_SIZES.find((n) => n >= limit + 1) ?? limit + 1;
}

/** Query parameters and the WHERE clauses they feed; `$n` numbering follows `params`. */
class Sql {
  readonly params: unknown[] = [];
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }
}

/**
 * Equality filters answered by the counters and an index `(tenant_id, <column>, created_at, id)`.
 * The counters keep one column per filter: `status` rows are summed when the filter is absent (a
 * handful of values); `project_id` has a row over every value (`''`, migration 0041) read when
 * the filter is absent, so a tenant's many projects never lengthen the sum. One more filter is one
 * entry here, one counter column and one index of that shape.
 */
const EQUALITY_FILTERS: readonly { key: 'status' | 'projectId'; column: string; everyValueSql?: string }[] = [
  { key: 'status', column: 'status' },
  { key: 'projectId', column: 'project_id', everyValueSql: "''" },
];

/**
 * A `from`/`to` bound Postgres can read, matching the same entries: every `created_at` lies in
 * [1970-01-01, 2149-06-06) (ingest refuses other times), so a bound outside that range is moved
 * just outside it — year 0000, which ISO 8601 allows and Postgres refuses, included. A bound in
 * range is passed as given (microseconds kept).
 */
function storableBound(iso: string): string {
  const at = Date.parse(iso);
  if (at < OCCURRED_AT_MIN_MS) return new Date(OCCURRED_AT_MIN_MS - 1).toISOString();
  if (at >= OCCURRED_AT_MAX_MS) return new Date(OCCURRED_AT_MAX_MS).toISOString();
  return iso;
}

/** The one statement of a logs page: exported for `EXPLAIN` in tests and the bench. */
export function logsStatement(q: LogsPageQuery): { text: string; values: unknown[]; prepare: boolean } {
  const sql = new Sql();
  const tenant = sql.param(q.tenantId);
  const cutoff = sql.param(q.cutoff.toISOString());
  const rowWhere = [
    `e.tenant_id = ${tenant}`,
    'e.created_at IS NOT NULL',
    `e.created_at >= ${cutoff}::timestamptz`,
  ];
  const countWhere = [
    `c.tenant_id = ${tenant}`,
    `c.day >= (${cutoff}::timestamptz AT TIME ZONE 'UTC')::date`,
  ];
  // The hour counters (migration 0042) have the day counters' columns, hour for day.
  const hourWhere = [`h.tenant_id = ${tenant}`];
  for (const { key, column, everyValueSql } of EQUALITY_FILTERS) {
    const value = q.filter[key];
    if (value === undefined) {
      // A literal, not a parameter: the statement may not read the counters at all.
      if (everyValueSql !== undefined) {
        countWhere.push(`c.${column} = ${everyValueSql}`);
        hourWhere.push(`h.${column} = ${everyValueSql}`);
      }
      continue;
    }
    const p = sql.param(value);
    rowWhere.push(`e.${column} = ${p}`);
    countWhere.push(`c.${column} = ${p}`);
    hourWhere.push(`h.${column} = ${p}`);
  }
  const { from, to, tag, q: recipient, templateId } = q.filter;
  if (from !== undefined) rowWhere.push(`e.created_at >= ${sql.param(storableBound(from))}::timestamptz`);
  if (to !== undefined) rowWhere.push(`e.created_at <= ${sql.param(storableBound(to))}::timestamptz`);
  if (tag !== undefined) rowWhere.push(`e.tags @> jsonb_build_array(${sql.param(tag)}::text)`);
  if (recipient !== undefined)
    rowWhere.push(`starts_with(lower(e.to_email), lower(${sql.param(recipient)}::text))`);
  if (templateId !== undefined) rowWhere.push(`e.template_id = ${sql.param(templateId)}::text`);
  const counted =
    from === undefined &&
    to === undefined &&
    tag === undefined &&
    recipient === undefined &&
    templateId === undefined;

  const where = rowWhere.join(' AND ');
  // A parameter, except on a first page (see `fetchSize`): a cursor's statement settles on its
  // generic plan with it (logs-plans.int.test.ts), not without it.
  const fetch = q.cursor === null && q.page === 1 ? String(fetchSize(q.limit)) : sql.param(q.limit + 1);
  const totalSql = counted
    ? `SELECT coalesce(sum(c.n), 0) FROM email_log_counts c WHERE ${countWhere.join(' AND ')}`
    : `SELECT count(*) FROM email_logs e WHERE ${where}`;

  let statement: string;
  if (q.cursor !== null) {
    const at = sql.param(q.cursor.createdAt);
    const id = sql.param(q.cursor.id);
    const after = `(${at}::timestamp AT TIME ZONE 'UTC')`;
    statement = `SELECT (${totalSql})::text AS total, ${PAGE} FROM (SELECT 1) AS one LEFT JOIN LATERAL (
      SELECT ${COLUMNS} FROM email_logs e
       WHERE ${where} AND e.created_at <= ${after}
         AND (e.created_at < ${after} OR e.id COLLATE "C" < ${id}::text COLLATE "C")
       ${ORDER} LIMIT ${fetch}) AS p ON true`;
  } else {
    // BigInt: (page − 1) · limit may pass 2^53 for absurd pages; Postgres takes it as bigint text.
    const skip = (BigInt(q.page) - 1n) * BigInt(q.limit);
    const deep = counted && skip >= (q.shortWalk ?? SHORT_WALK);
    const offset = skip === 0n && !deep ? '' : sql.param(skip.toString());
    if (deep) {
      // The day holding entry number `offset` (0-based, newest first) and how many are newer; then
      // the hour of that day holding it, and how many are newer than that hour.
      statement = `WITH days AS (
          SELECT c.day, sum(c.n) AS n FROM email_log_counts c WHERE ${countWhere.join(' AND ')} GROUP BY c.day
        ), target AS (
          SELECT day, before FROM (
            SELECT day, n, sum(n) OVER (ORDER BY day DESC) - n AS before FROM days) AS cum
           WHERE n > 0 AND before <= ${offset}::bigint AND before + n > ${offset}::bigint
        ), hours AS (
          SELECT h.hour, sum(h.n) AS n FROM email_log_hour_counts h
           WHERE ${hourWhere.join(' AND ')}
             AND h.hour >= (SELECT day::timestamp AT TIME ZONE 'UTC' FROM target)
             AND h.hour < (SELECT (day + 1)::timestamp AT TIME ZONE 'UTC' FROM target)
           GROUP BY h.hour
        ), target_hour AS (
          SELECT hour, before FROM (
            SELECT hour, n, (SELECT before FROM target) + sum(n) OVER (ORDER BY hour DESC) - n AS before
              FROM hours) AS cum
           WHERE n > 0 AND before <= ${offset}::bigint AND before + n > ${offset}::bigint
        ), anchor AS (
          -- The first entry of the page, found by stepping over the entries of one hour in the
          -- index alone (an index-only scan: no row is read for the entries skipped).
          SELECT e.created_at, e.id COLLATE "C" AS id FROM email_logs e
           WHERE ${where}
             -- A row comparison, not a second bound on created_at: the planner would take the
             -- pair for a narrow range of unknown width, expect a handful of rows and sort them.
             AND (e.created_at, e.id COLLATE "C") < ((SELECT hour + interval '1 hour' FROM target_hour), '')
           ${ORDER} LIMIT 1 OFFSET (SELECT ${offset}::bigint - before FROM target_hour)
        )
        SELECT (SELECT coalesce(sum(n), 0) FROM days)::text AS total, ${PAGE} FROM (SELECT 1) AS one
          LEFT JOIN LATERAL (
            SELECT ${COLUMNS} FROM email_logs e
             WHERE ${where}
               AND (e.created_at, e.id COLLATE "C") <= ((SELECT created_at FROM anchor), (SELECT id FROM anchor))
             ${ORDER} LIMIT ${fetch}) AS p ON true`;
    } else {
      statement = `SELECT (${totalSql})::text AS total, ${PAGE} FROM (SELECT 1) AS one LEFT JOIN LATERAL (
        SELECT ${COLUMNS} FROM email_logs e WHERE ${where}
         ${ORDER} LIMIT ${fetch}${offset === '' ? '' : ` OFFSET ${offset}::bigint`}) AS p ON true`;
    }
  }
  // Named (prepared once per connection) unless its plan needs the values: with both `status` and
  // `projectId`, a plan made without them expects a handful of matches and sorts them (seen with
  // `plan_cache_mode = force_generic_plan`, logs-plans.int.test.ts); every other text keeps its
  // index walk in the generic plan Postgres may switch to after five executions.
  const prepare = !(q.filter.status !== undefined && q.filter.projectId !== undefined);
  return { text: statement, values: sql.params, prepare };
}

export async function logsPage(pool: pg.Pool | pg.PoolClient, q: LogsPageQuery): Promise<LogsPageResult> {
  const { text, values, prepare } = logsStatement(q);
  // Named: each connection parses and plans the statement once (there are a few dozen texts, one
  // per filter combination and position kind), not on every request.
  const { rows } = await pool.query<LogRow>(
    prepare ? { name: preparedName('logs', text), text, values } : { text, values },
  );
  const total = Number(rows[0]?.total ?? 0);
  const found = rows.filter((r) => r.id !== null);
  const shown = found.slice(0, q.limit);
  const page = q.cursor?.page ?? q.page;
  const last = shown.at(-1);
  const next =
    found.length > q.limit && last ? { createdAt: last.ck, id: last.id ?? '', page: page + 1 } : null;
  return { entries: shown.map(toEntry), total, next, page };
}
