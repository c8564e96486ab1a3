import type { MailStats } from '@tern/contracts';
import type pg from 'pg';

/**
 * Counts of campaign and sequence mail (SPEC §15), exact: every email a fan-out produced has a
 * `bulk_emails` row (written before its email.queued), joined by primary key to its log entry.
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
};

/** Stats per `source` and step; `key(source, step)` → stats. Unsubscribes come from `unsubscribe_sources`. */
export async function mailStats(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  sources: readonly string[],
): Promise<Map<string, MailStats>> {
  const out = new Map<string, MailStats>();
  if (sources.length === 0) return out;
  const [counts, unsubscribes] = await Promise.all([
    pool.query<Row>(
      `SELECT b.source, b.step, count(*) AS recipients,
              count(*) FILTER (WHERE l.status IN ('SENT', 'DELAYED', 'DELIVERED', 'BOUNCED')) AS sent,
              count(*) FILTER (WHERE l.status = 'DELIVERED') AS delivered,
              count(*) FILTER (WHERE COALESCE((l.state->>'openCount')::int, 0) > 0) AS opened,
              count(*) FILTER (WHERE COALESCE((l.state->>'clickCount')::int, 0) > 0) AS clicked,
              count(*) FILTER (WHERE l.status = 'BOUNCED') AS bounced,
              count(*) FILTER (WHERE COALESCE((l.state->>'complaintCount')::int, 0) > 0) AS complained
         FROM bulk_emails b
         LEFT JOIN email_logs l ON l.tenant_id = b.tenant_id AND l.id = b.email_id AND l.created_at IS NOT NULL
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
