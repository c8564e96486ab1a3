import { createHash, randomBytes } from 'node:crypto';
import type { DmarcSource, DmarcSummary } from '@tern/contracts/wire';
import { columnArrays } from '@tern/kernel';
import type pg from 'pg';
import type { ReceivedMessage } from './complete.js';
import {
  DMARC_LIMITS,
  type DmarcLimits,
  DmarcRejected,
  looksLikeDmarcReport,
  parseDmarcReport,
} from './dmarc-parse.js';
import { attachmentKept } from './parse.js';
import { expireReceived, type RetentionScope } from './store.js';

/**
 * DMARC aggregate reports (SPEC §26) mailed to a receiving address of the tenant (SPEC §24): the
 * `onReceived` consumer that parses each report attachment of a stored message and records it, and
 * the per-domain read of `GET /domains/:id/dmarc`. Only this module names `dmarc_reports` and
 * `dmarc_records` (infra/migrations/postgres/0270_dmarc_reports.sql).
 */

type Db = pg.Pool | pg.ClientBase;

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const newReportId = () => `dmr_${randomBytes(12).toString('base64url')}`;
/**
 * A refused attachment's id, from the message and the attachment's place in it: a consumer run
 * again on the same message (an arrival redone before it was marked announced) records it once.
 */
const rejectedId = (inboundId: string, index: number) =>
  `dmr_${createHash('sha256').update(`${inboundId}:${index}`).digest('base64url').slice(0, 16)}`;

export interface DmarcOutcome {
  attachment: string | null;
  status: 'stored' | 'duplicate' | 'rejected';
  reason?: string;
  domain?: string;
}

/**
 * The consumer: each attachment of a fresh message that looks like a report (RFC 7489 §7.2.1.1
 * name, or a gzip/zip/XML type under a `Report Domain:` subject) is parsed and stored, or recorded
 * `rejected` with the reason. A message without one is not touched.
 */
export function createDmarcConsumer(deps: { pool: pg.Pool; logger: Logger; limits?: DmarcLimits }) {
  const limits = deps.limits ?? DMARC_LIMITS;
  return async (message: ReceivedMessage): Promise<DmarcOutcome[]> => {
    if (!message.fresh) return [];
    const outcomes: DmarcOutcome[] = [];
    for (const [index, attachment] of (message.parsed.attachments ?? []).entries()) {
      if (!looksLikeDmarcReport(attachment, message.subject)) continue;
      const name = attachment.filename ?? null;
      try {
        // Over 5 MiB the listener did not keep its bytes (docs/inbound.md): refused by its size.
        if (!attachmentKept(attachment))
          throw new DmarcRejected(
            attachment.size > limits.maxCompressedBytes
              ? `attachment of ${attachment.size} bytes is over ${limits.maxCompressedBytes}`
              : `attachment of ${attachment.size} bytes was not kept in memory`,
          );
        const report = await parseDmarcReport(attachment.content, limits);
        const stored = await storeReport(deps.pool, message, name, report);
        outcomes.push({
          attachment: name,
          status: stored ? 'stored' : 'duplicate',
          domain: report.policy.domain,
        });
        deps.logger.info(
          {
            inboundId: message.id,
            domain: report.policy.domain,
            records: report.records.length,
            duplicate: !stored,
          },
          'dmarc: aggregate report received',
        );
      } catch (error) {
        if (!(error instanceof DmarcRejected)) throw error;
        await deps.pool.query(
          `INSERT INTO dmarc_reports (id, tenant_id, inbound_id, attachment, status, reason, received_at)
           VALUES ($1, $2, $3, $4, 'rejected', $5, $6) ON CONFLICT (id) DO NOTHING`,
          [
            rejectedId(message.id, index),
            message.tenantId,
            message.id,
            name,
            error.reason,
            message.receivedAt,
          ],
        );
        outcomes.push({ attachment: name, status: 'rejected', reason: error.reason });
        deps.logger.warn({ inboundId: message.id, reason: error.reason }, 'dmarc: aggregate report refused');
      }
    }
    return outcomes;
  };
}

async function storeReport(
  pool: pg.Pool,
  message: ReceivedMessage,
  attachment: string | null,
  report: Awaited<ReturnType<typeof parseDmarcReport>>,
): Promise<boolean> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const id = newReportId();
    const { domain, ...policy } = report.policy;
    const inserted = await client.query(
      `INSERT INTO dmarc_reports (id, tenant_id, inbound_id, attachment, status, domain, org_name, report_id,
                                  begin_at, end_at, policy, received_at)
       VALUES ($1, $2, $3, $4, 'stored', $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (tenant_id, domain, org_name, report_id) WHERE status = 'stored' DO NOTHING`,
      [
        id,
        message.tenantId,
        message.id,
        attachment,
        domain,
        report.orgName,
        report.reportId,
        report.begin,
        report.end,
        JSON.stringify(policy),
        message.receivedAt,
      ],
    );
    if (inserted.rowCount === 0) {
      await client.query('ROLLBACK');
      return false;
    }
    // One statement for every record: arrays of columns, unnested.
    const r = report.records;
    await client.query(
      `INSERT INTO dmarc_records (report_id, tenant_id, domain, end_at, source_ip, count, disposition, dkim, spf,
                                  header_from, auth)
       SELECT $1, $2, $3, $4, u.ip, u.count, u.disposition, u.dkim, u.spf, u.header_from, u.auth
       FROM unnest($5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::jsonb[])
         AS u(ip, count, disposition, dkim, spf, header_from, auth)`,
      [
        id,
        message.tenantId,
        domain,
        report.end,
        ...columnArrays(r, ['sourceIp', 'count', 'disposition', 'dkim', 'spf', 'headerFrom']),
        r.map((x) => JSON.stringify(x.authResults)),
      ],
    );
    await client.query('COMMIT');
    return true;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

// The answer's shape is the wire type of `GET /domains/:id/dmarc` (pinned to its schema in the contracts).
export type { DmarcSource, DmarcSummary };

/**
 * The reports of one domain whose period ended within `days`: sending sources by IP (most mail
 * first), volumes by disposition and by aligned DKIM/SPF result, the reporters and the date range.
 * `rejected` counts the tenant's refused report attachments of the same window (their domain is
 * unknown: they were never read). `receivedSince`: the tenant's retention cut-off (SPEC §9): a
 * report received before it is invisible at once, whatever `days` asks, before `expireDmarc` deletes it.
 */
export async function dmarcSummary(
  db: Db,
  tenantId: string,
  domain: string,
  days: number,
  receivedSince: Date = new Date(0),
): Promise<DmarcSummary> {
  const since = new Date(Date.now() - days * 86_400_000);
  const sources = await db.query<{
    source_ip: string;
    count: string;
    none: string;
    quarantine: string;
    reject: string;
    dkim_pass: string;
    dkim_fail: string;
    spf_pass: string;
    spf_fail: string;
    reporters: string[];
    first_seen: Date;
    last_seen: Date;
  }>(
    `SELECT d.source_ip,
            sum(d.count) AS count,
            sum(d.count) FILTER (WHERE d.disposition = 'none') AS none,
            sum(d.count) FILTER (WHERE d.disposition = 'quarantine') AS quarantine,
            sum(d.count) FILTER (WHERE d.disposition = 'reject') AS reject,
            sum(d.count) FILTER (WHERE d.dkim = 'pass') AS dkim_pass,
            sum(d.count) FILTER (WHERE d.dkim = 'fail') AS dkim_fail,
            sum(d.count) FILTER (WHERE d.spf = 'pass') AS spf_pass,
            sum(d.count) FILTER (WHERE d.spf = 'fail') AS spf_fail,
            array_agg(DISTINCT r.org_name ORDER BY r.org_name) AS reporters,
            min(r.begin_at) AS first_seen,
            max(r.end_at) AS last_seen
     FROM dmarc_records d JOIN dmarc_reports r ON r.id = d.report_id
     WHERE d.tenant_id = $1 AND d.domain = $2 AND d.end_at >= $3 AND r.received_at >= $4
     GROUP BY d.source_ip
     ORDER BY sum(d.count) DESC, d.source_ip
     LIMIT 1000`,
    [tenantId, domain, since, receivedSince],
  );
  const counts = await db.query<{ reports: string; rejected: string }>(
    `SELECT count(*) FILTER (WHERE status = 'stored' AND domain = $2 AND end_at >= $3) AS reports,
            count(*) FILTER (WHERE status = 'rejected' AND received_at >= $3) AS rejected
     FROM dmarc_reports WHERE tenant_id = $1 AND received_at >= $4`,
    [tenantId, domain, since, receivedSince],
  );
  const n = (v: string | null) => Number(v ?? 0);
  const list = sources.rows.map((s) => ({
    sourceIp: s.source_ip,
    count: n(s.count),
    disposition: { none: n(s.none), quarantine: n(s.quarantine), reject: n(s.reject) },
    dkim: { pass: n(s.dkim_pass), fail: n(s.dkim_fail) },
    spf: { pass: n(s.spf_pass), fail: n(s.spf_fail) },
    reporters: s.reporters,
    firstSeen: s.first_seen.toISOString(),
    lastSeen: s.last_seen.toISOString(),
  }));
  return {
    domain,
    days,
    reports: n(counts.rows[0]?.reports ?? null),
    rejected: n(counts.rows[0]?.rejected ?? null),
    messages: list.reduce((a, s) => a + s.count, 0),
    sources: list,
  };
}

/**
 * Retention (SPEC §9) of the DMARC aggregate reports: a report, stored or refused, goes with the
 * tenant's retention counted from its arrival (`received_at`), as the received message it came in
 * (`expireInbound`); its records go with it (ON DELETE CASCADE). `scope` as `expireInbound`'s.
 * Returns the reports deleted.
 */
export function expireDmarc(db: Db, cutoff: Date, scope: RetentionScope = {}): Promise<number> {
  return expireReceived(db, 'dmarc_reports', cutoff, scope);
}
