import type { MailStats } from '@tern/contracts';
import { emailLogRowSql, humanEventsSql } from '@tern/read-models';
import type pg from 'pg';

/**
 * Counts of campaign and sequence mail (SPEC §15), exact: every email a fan-out produced has a
 * `bulk_emails` row (written before its email.queued), joined by primary key to its log entry
 * (packages/read-models' `emailLogRowSql`); a recipient skipped because its message could not be
 * composed has one with `failed_reason`.
 * `sent` counts emails handed to a provider (SENT, DELAYED, DELIVERED, BOUNCED); `opened`/`clicked`
 * emails with at least one human open/click (the fold leaves bot hits out).
 */

export const ZERO_STATS: MailStats = {
  recipients: 0,
  sent: 0,
  delivered: 0,
  opened: 0,
  clicked: 0,
  bounced: 0,
  complained: 0,
  unsubscribed: 0,
  failed: 0,
};

type Row = {
  source: string;
  step: number;
  recipients: string;
  sent: string;
  delivered: string;
  opened: string;
  clicked: string;
  bounced: string;
  complained: string;
  failed: string;
};

/**
 * Stats per `source` and step; `key(source, step)` → stats. Unsubscribes come from `unsubscribe_sources`.
 * Each email of the sources looks up its own log row by key (`LATERAL … LIMIT 1`, which Postgres
 * runs per email rather than flatten into a join): one probe of the primary key, pruned to the day
 * of its id while it runs (the log is partitioned by day of email id, migration 0560), so a
 * campaign's counts read the days of its emails, not the tenant's whole log
 * (docs/deploy.md, "A log partitioned by day") — and read each row once whatever Postgres guesses
 * of the tables' sizes. A join bounded by the sources' lowest and highest ids (until 2026-12-07)
 * was planned, on tables never analysed (PGlite's always: it runs no autovacuum), as a nested loop
 * that read the whole span again for every email: ≈ 90 s for 10 000
 * (`packages/bulk/test/stats-plan.int.test.ts`).
 */
export async function mailStats(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  sources: readonly string[],
): Promise<Map<string, MailStats>> {
  const out = new Map<string, MailStats>();
  if (sources.length === 0) return out;
  const [counts, unsubscribes] = await Promise.all([
    pool.query<Row>(
      `SELECT b.source, b.step, count(*) FILTER (WHERE b.failed_reason IS NULL) AS recipients,
              count(*) FILTER (WHERE b.failed_reason IS NOT NULL) AS failed,
              count(*) FILTER (WHERE l.status IN ('SENT', 'DELAYED', 'DELIVERED', 'BOUNCED')) AS sent,
              count(*) FILTER (WHERE l.status = 'DELIVERED') AS delivered,
              count(*) FILTER (WHERE l.open_count > 0) AS opened,
              count(*) FILTER (WHERE l.click_count > 0) AS clicked,
              count(*) FILTER (WHERE l.status = 'BOUNCED') AS bounced,
              count(*) FILTER (WHERE l.complaint_count > 0) AS complained
         FROM bulk_emails b
         LEFT JOIN LATERAL (SELECT r.status, r.open_count, r.click_count, r.complaint_count
                              FROM ${emailLogRowSql} r
                             WHERE r.tenant_id = b.tenant_id AND r.id = b.email_id LIMIT 1) l ON true
        WHERE b.tenant_id = $1 AND b.source = ANY($2::text[])
        GROUP BY b.source, b.step`,
      [tenantId, sources],
    ),
    pool.query<{ source: string; n: string }>(
      `SELECT source, count(*) AS n FROM unsubscribe_sources
        WHERE tenant_id = $1 AND (source = ANY($2::text[]) OR split_part(source, ':', 1) || ':' || split_part(source, ':', 2) = ANY($2::text[]))
        GROUP BY source`,
      [tenantId, sources],
    ),
  ]);
  for (const r of counts.rows) {
    out.set(statsKey(r.source, r.step), {
      recipients: Number(r.recipients),
      sent: Number(r.sent),
      delivered: Number(r.delivered),
      opened: Number(r.opened),
      clicked: Number(r.clicked),
      bounced: Number(r.bounced),
      complained: Number(r.complained),
      unsubscribed: 0,
      failed: Number(r.failed),
    });
  }
  for (const u of unsubscribes.rows) {
    // `campaign:<id>` → step 0; `sequence:<id>:<step>` → that step.
    const [kind, id, step] = u.source.split(':');
    const key = statsKey(`${kind}:${id}`, step === undefined ? 0 : Number(step));
    const s = out.get(key) ?? { ...ZERO_STATS };
    s.unsubscribed += Number(u.n);
    out.set(key, s);
  }
  return out;
}

export const statsKey = (source: string, step: number) => `${source}#${step}`;

/** The kinds of `mailDaily`'s buckets and the event that marks each. */
export const DAILY_EVENTS = {
  sent: 'email.sent',
  delivered: 'email.delivered',
  opened: 'email.opened',
  clicked: 'email.clicked',
  bounced: 'email.bounced',
} as const;
export type DailyKind = keyof typeof DAILY_EVENTS;

/**
 * The mail of `source` per UTC day of what happened to it, from the timeline (`email_events`):
 * each email counts once per kind, on the day of its first such event — a scanner's open or click
 * (`bot: true`) is not one, nor a machine open (`machine: true`, SPEC §21), as in `mailStats` — so over a period holding all of it the days add up
 * to the stats. Days before `since` are left out. One scan of the source's emails' timelines
 * (packages/read-models' `humanEventsSql`).
 */
export async function mailDaily(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  source: string,
  since: Date,
): Promise<{ day: string; kind: DailyKind; n: number }[]> {
  const kinds = Object.keys(DAILY_EVENTS) as DailyKind[];
  const { rows } = await pool.query<{ day: string; type: string; n: string }>(
    `WITH firsts AS (
       SELECT e.type, min(e.occurred_at) AS at
         FROM bulk_emails b
         JOIN ${humanEventsSql} e ON e.tenant_id = b.tenant_id AND e.email_id = b.email_id
        WHERE b.tenant_id = $1 AND b.source = $2 AND e.type = ANY($3::text[])
        GROUP BY b.email_id, e.type
     )
     SELECT to_char((at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, type, count(*) AS n
       FROM firsts WHERE at >= $4
      GROUP BY 1, 2`,
    [tenantId, source, kinds.map((k) => DAILY_EVENTS[k]), since],
  );
  const kindOf = new Map(kinds.map((k) => [DAILY_EVENTS[k] as string, k]));
  return rows.map((r) => ({ day: r.day, kind: kindOf.get(r.type)!, n: Number(r.n) }));
}
