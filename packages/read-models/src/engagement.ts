import type { DeliveryEvent } from '@tern/contracts';
import type { FoldedEmail } from '@tern/domain';
import { columnArrays } from '@tern/kernel';
import type { PgReadModel } from './read-model.js';

/**
 * The per-recipient engagement rollup (SPEC §27): for each address of a tenant, when it last
 * received (delivered), opened (a person, not a machine), clicked and bounced, and the tags of the
 * mail it got. Segments' engagement and tag clauses read it by index (`engagedSql`,
 * `recipientTaggedSql`) instead of scanning every email of every contact.
 *
 * Every column is a maximum, so the fold commutes: a redelivered or late event changes nothing
 * it should not, and a rebuild from the log gives the same rows.
 */

export type EngagementKind = 'opened' | 'clicked' | 'bounced' | 'received';

const COLUMN: Record<EngagementKind, string> = {
  opened: 'last_opened_at',
  clicked: 'last_clicked_at',
  bounced: 'last_bounced_at',
  received: 'last_received_at',
};

/**
 * A predicate: the address `emailExpr` of tenant `tenantExpr` had `kind` at or after `sinceExpr`:
 * one index range of `recipient_engagement_<kind>_idx`, uncorrelated, so Postgres hashes it once
 * (a hashed semi-join at the top of a filter, a hashed subplan under `OR`/`NOT` — given the
 * `work_mem` the segment statements set, `SEGMENT_WORK_MEM` of packages/bulk) and probes it per
 * contact: never a scan of the rollup, nor of the emails, per contact.
 */
export const engagedSql = (tenantExpr: string, emailExpr: string, kind: EngagementKind, sinceExpr: string) =>
  `(${emailExpr} IN (SELECT re.email FROM recipient_engagement re
     WHERE re.tenant_id = ${tenantExpr} AND re.${COLUMN[kind]} >= ${sinceExpr}))`;

/** A predicate: the address got mail tagged `tagExpr` (one range of the primary key, hashed likewise). */
export const recipientTaggedSql = (tenantExpr: string, emailExpr: string, tagExpr: string) =>
  `(${emailExpr} IN (SELECT rt.email FROM recipient_tags rt WHERE rt.tenant_id = ${tenantExpr} AND rt.tag = ${tagExpr}))`;

interface Touch {
  tenantId: string;
  email: string;
  received: string | null;
  opened: string | null;
  clicked: string | null;
  bounced: string | null;
}

const later = (a: string | null, b: string | null) => (a === null ? b : b === null || a >= b ? a : b);

function kindOf(e: DeliveryEvent): EngagementKind | null {
  switch (e.type) {
    case 'email.delivered':
      return 'received';
    case 'email.opened':
      return (e.data as { machine?: boolean }).machine === true ? null : 'opened';
    case 'email.clicked':
      return 'clicked';
    case 'email.bounced':
      return 'bounced';
    default:
      return null;
  }
}

/**
 * What a batch's emails add to the rollup. An email's events count once its recipient is known:
 * when `email.queued` arrives after other events (out of order), the fold's own state supplies
 * the last open and the delivery or bounce that won the status.
 */
export function engagementTouches(emails: readonly FoldedEmail[]): {
  touches: Touch[];
  tags: { tenantId: string; email: string; tag: string; at: string }[];
} {
  const byKey = new Map<string, Touch>();
  const tags: { tenantId: string; email: string; tag: string; at: string }[] = [];
  for (const f of emails) {
    const queued = f.after.queued;
    const email = queued?.toEmail?.toLowerCase();
    if (queued == null || email === undefined) continue;
    const t: Touch = {
      tenantId: f.tenantId,
      email,
      received: null,
      opened: null,
      clicked: null,
      bounced: null,
    };
    for (const e of f.events) {
      const kind = kindOf(e);
      if (kind !== null) t[kind] = later(t[kind], new Date(e.occurredAt).toISOString());
    }
    const fresh = f.before?.queued == null;
    if (fresh) {
      t.opened = later(t.opened, f.after.lastOpenedAt);
      if (f.after.status === 'DELIVERED') t.received = later(t.received, f.after.statusAt);
      if (f.after.status === 'BOUNCED') t.bounced = later(t.bounced, f.after.statusAt);
      for (const tag of queued.tags) tags.push({ tenantId: f.tenantId, email, tag, at: queued.createdAt });
    }
    if (t.received === null && t.opened === null && t.clicked === null && t.bounced === null) continue;
    const k = `${t.tenantId}\u0000${email}`;
    const seen = byKey.get(k);
    if (seen === undefined) byKey.set(k, t);
    else
      for (const kind of ['received', 'opened', 'clicked', 'bounced'] as const)
        seen[kind] = later(seen[kind], t[kind]);
  }
  // Locked in one order by concurrent batches.
  const touches = [...byKey.values()].sort((a, b) =>
    a.tenantId === b.tenantId ? (a.email < b.email ? -1 : 1) : a.tenantId < b.tenantId ? -1 : 1,
  );
  return { touches, tags };
}

export const recipientEngagement: PgReadModel = {
  name: 'recipient engagement',
  store: 'postgres',
  rebuild: 'truncate',
  tables: ['recipient_engagement', 'recipient_tags'],
  async apply(client, { folded }) {
    const { touches, tags } = engagementTouches(folded.emails);
    if (touches.length > 0)
      await client.query(
        `INSERT INTO recipient_engagement AS r
           (tenant_id, email, last_received_at, last_opened_at, last_clicked_at, last_bounced_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[],
                              $5::timestamptz[], $6::timestamptz[])
         ON CONFLICT (tenant_id, email) DO UPDATE SET
           last_received_at = GREATEST(r.last_received_at, EXCLUDED.last_received_at),
           last_opened_at   = GREATEST(r.last_opened_at, EXCLUDED.last_opened_at),
           last_clicked_at  = GREATEST(r.last_clicked_at, EXCLUDED.last_clicked_at),
           last_bounced_at  = GREATEST(r.last_bounced_at, EXCLUDED.last_bounced_at)`,
        columnArrays(touches, ['tenantId', 'email', 'received', 'opened', 'clicked', 'bounced']),
      );
    if (tags.length > 0)
      await client.query(
        `INSERT INTO recipient_tags AS r (tenant_id, tag, email, last_at)
         SELECT t, g, e, max(a) FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS u(t, g, e, a)
          GROUP BY t, g, e ORDER BY t, g, e
         ON CONFLICT (tenant_id, tag, email) DO UPDATE SET last_at = GREATEST(r.last_at, EXCLUDED.last_at)`,
        [
          tags.map((t) => t.tenantId),
          tags.map((t) => t.tag),
          tags.map((t) => t.email),
          tags.map((t) => t.at),
        ],
      );
  },
  async expire(client, scope, cutoff) {
    const [where, params] =
      'tenantId' in scope
        ? ['tenant_id = $2', [cutoff, scope.tenantId]]
        : ['NOT (tenant_id = ANY($2::text[]))', [cutoff, scope.allBut]];
    const a = await client.query(
      `DELETE FROM recipient_engagement WHERE ${where}
          AND GREATEST(last_received_at, last_opened_at, last_clicked_at, last_bounced_at) < $1`,
      params,
    );
    const b = await client.query(`DELETE FROM recipient_tags WHERE ${where} AND last_at < $1`, params);
    return (a.rowCount ?? 0) + (b.rowCount ?? 0);
  },
  async eraseRecipient(client, { tenantId, address }) {
    const a = await client.query('DELETE FROM recipient_engagement WHERE tenant_id = $1 AND email = $2', [
      tenantId,
      address,
    ]);
    const b = await client.query('DELETE FROM recipient_tags WHERE tenant_id = $1 AND email = $2', [
      tenantId,
      address,
    ]);
    return { recipient_engagement: a.rowCount ?? 0, recipient_tags: b.rowCount ?? 0 };
  },
};
