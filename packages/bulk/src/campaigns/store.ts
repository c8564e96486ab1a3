import type { Campaign, CampaignStatus, MailStats, UpdateCampaignBody } from '@tern/contracts';
import { type PageQuery, pageWindow } from '@tern/contracts';
import { newestFirstPage, type Page } from '@tern/kernel';
import type pg from 'pg';
import type { SegmentFilter } from '../segments/filter.js';
import { mailStats, statsKey, ZERO_STATS } from '../stats.js';

/** Campaigns in Postgres (`campaigns`, SPEC §15): plain functions of a pool and the tenant id. */

type Queryable = Pick<pg.Pool, 'query'>;

export interface CampaignRow {
  tenant_id: string;
  id: string;
  name: string;
  from_address: string;
  audience: string | null;
  segment_id: string | null;
  /** The segment's filter, copied at the first claim (SPEC §27: evaluated once). */
  segment_filter: SegmentFilter | null;
  /** The recipients of a segment campaign are listed (`campaign_recipients`). */
  recipients_ready: boolean;
  topic_id: string | null;
  template_id: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  status: CampaignStatus;
  scheduled_at: Date | null;
  snapshot_at: Date | null;
  fanout_cursor: string | null;
  sent_at: Date | null;
  send_rate_per_minute: number | null;
  next_due_at: Date | null;
  /** Its email ids start with `snapshot_at` (made after migration 0530); false: hash only. */
  ordered_ids: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `tenant_id, id, name, from_address, audience, segment_id, segment_filter, recipients_ready, topic_id, template_id, subject, html, text, status,
  scheduled_at, snapshot_at, fanout_cursor, sent_at, send_rate_per_minute, next_due_at, ordered_ids, created_at, updated_at`;

export const campaignSource = (id: string) => `campaign:${id}`;

function toCampaign(r: CampaignRow, stats: MailStats): Campaign {
  return {
    id: r.id,
    name: r.name,
    from: r.from_address,
    audience: r.audience,
    segment: r.segment_id,
    topic: r.topic_id,
    templateId: r.template_id,
    subject: r.subject,
    html: r.html,
    text: r.text,
    status: r.status,
    scheduledAt: r.scheduled_at?.toISOString() ?? null,
    sentAt: r.sent_at?.toISOString() ?? null,
    sendRatePerMinute: r.send_rate_per_minute,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    stats,
  };
}

async function withStats(db: Queryable, tenantId: string, rows: CampaignRow[]): Promise<Campaign[]> {
  const stats = await mailStats(
    db,
    tenantId,
    rows.filter((r) => r.status === 'sending' || r.status === 'sent').map((r) => campaignSource(r.id)),
  );
  return rows.map((r) => toCampaign(r, stats.get(statsKey(campaignSource(r.id), 0)) ?? { ...ZERO_STATS }));
}

export interface NewCampaign {
  id: string;
  name: string;
  from: string;
  audience: string | null;
  /** SPEC §27: a segment instead of the audience; absent = none. */
  segment?: string | null;
  /** SPEC §27: only this topic's subscribers; absent = none. */
  topic?: string | null;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  scheduledAt: Date | null;
  /** SPEC §23; absent = unpaced. */
  sendRatePerMinute?: number | null;
}

export async function insertCampaign(
  db: Queryable,
  tenantId: string,
  c: NewCampaign,
  at: Date,
): Promise<Campaign> {
  const { rows } = await db.query<CampaignRow>(
    `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, template_id, subject, html, text,
                            status, scheduled_at, send_rate_per_minute, created_at, updated_at, segment_id, topic_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'draft', $10, $12, $11, $11, $13, $14)
     RETURNING ${COLUMNS}`,
    [
      tenantId,
      c.id,
      c.name,
      c.from,
      c.audience,
      c.templateId,
      c.subject,
      c.html,
      c.text,
      c.scheduledAt,
      at,
      c.sendRatePerMinute ?? null,
      c.segment ?? null,
      c.topic ?? null,
    ],
  );
  return toCampaign(rows[0]!, { ...ZERO_STATS });
}

export async function getCampaignRow(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<CampaignRow | null> {
  const { rows } = await db.query<CampaignRow>(
    `SELECT ${COLUMNS} FROM campaigns WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return rows[0] ?? null;
}

export async function getCampaign(db: Queryable, tenantId: string, id: string): Promise<Campaign | null> {
  const row = await getCampaignRow(db, tenantId, id);
  if (row === null) return null;
  return (await withStats(db, tenantId, [row]))[0]!;
}

/** One page, newest first, with stats. */
export async function listCampaigns(
  db: Queryable,
  tenantId: string,
  page: PageQuery,
): Promise<Page<Campaign>> {
  const { rows, total } = await newestFirstPage<CampaignRow>(
    db,
    { table: 'campaigns', columns: COLUMNS },
    tenantId,
    pageWindow(page),
  );
  return { items: await withStats(db, tenantId, rows), total };
}

export type DraftOutcome =
  | { kind: 'not_found' }
  | { kind: 'not_draft'; status: CampaignStatus }
  | { kind: 'ok'; row: CampaignRow };

/**
 * The outcome of a statement that changes a campaign only in the states it may leave: `ok` with the
 * row it returned, else why not (no such campaign, or its status).
 */
async function draftOutcome(
  db: Queryable,
  tenantId: string,
  id: string,
  changed: CampaignRow | undefined,
): Promise<DraftOutcome> {
  if (changed) return { kind: 'ok', row: changed };
  const existing = await getCampaignRow(db, tenantId, id);
  return existing === null ? { kind: 'not_found' } : { kind: 'not_draft', status: existing.status };
}

/** Applies a patch to a draft (the caller checks the result still has content). */
export async function updateDraft(
  db: Queryable,
  tenantId: string,
  id: string,
  patch: UpdateCampaignBody,
  at: Date,
): Promise<DraftOutcome> {
  const set: string[] = [];
  const values: unknown[] = [tenantId, id, at];
  const column = {
    name: 'name',
    from: 'from_address',
    audience: 'audience',
    segment: 'segment_id',
    topic: 'topic_id',
    templateId: 'template_id',
    subject: 'subject',
    html: 'html',
    text: 'text',
    scheduledAt: 'scheduled_at',
    sendRatePerMinute: 'send_rate_per_minute',
  } as const;
  for (const [field, col] of Object.entries(column) as [keyof typeof column, string][]) {
    const value = patch[field];
    if (value === undefined) continue;
    values.push(field === 'scheduledAt' && value !== null ? new Date(value) : value);
    set.push(`${col} = $${values.length}`);
  }
  // An audience and a segment replace each other.
  if (patch.audience !== undefined && patch.segment === undefined) set.push('segment_id = NULL');
  if (patch.segment !== undefined && patch.audience === undefined) set.push('audience = NULL');
  const { rows } = await db.query<CampaignRow>(
    `UPDATE campaigns SET ${[...set, 'updated_at = $3'].join(', ')}
      WHERE tenant_id = $1 AND id = $2 AND status = 'draft' RETURNING ${COLUMNS}`,
    values,
  );
  return draftOutcome(db, tenantId, id, rows[0]);
}

export async function campaignOf(db: Queryable, row: CampaignRow): Promise<Campaign> {
  return (await withStats(db, row.tenant_id, [row]))[0]!;
}

/** Deletes a draft. */
export async function deleteDraft(
  db: Queryable,
  tenantId: string,
  id: string,
): Promise<'deleted' | 'not_found' | CampaignStatus> {
  const { rowCount } = await db.query(
    `DELETE FROM campaigns WHERE tenant_id = $1 AND id = $2 AND status = 'draft'`,
    [tenantId, id],
  );
  if ((rowCount ?? 0) > 0) return 'deleted';
  const existing = await getCampaignRow(db, tenantId, id);
  return existing === null ? 'not_found' : existing.status;
}

/**
 * `POST /campaigns/:id/send`: a draft becomes `scheduled` (its `scheduledAt` still ahead) or
 * `sending` (the fan-out worker picks it up). Anything else stays as it is.
 */
export async function requestSend(
  db: Queryable,
  tenantId: string,
  id: string,
  at: Date,
): Promise<DraftOutcome> {
  const { rows } = await db.query<CampaignRow>(
    `UPDATE campaigns
        SET status = CASE WHEN scheduled_at IS NOT NULL AND scheduled_at > $3 THEN 'scheduled' ELSE 'sending' END,
            updated_at = $3
      WHERE tenant_id = $1 AND id = $2 AND status = 'draft'
      RETURNING ${COLUMNS}`,
    [tenantId, id, at],
  );
  return draftOutcome(db, tenantId, id, rows[0]);
}

/**
 * `POST /campaigns/:id/cancel`: a draft, or a scheduled campaign the worker has not taken yet,
 * becomes `cancelled`. The worker takes a campaign in one statement with the same condition, so
 * the two never both win.
 */
export async function cancelCampaign(
  db: Queryable,
  tenantId: string,
  id: string,
  at: Date,
): Promise<DraftOutcome> {
  const { rows } = await db.query<CampaignRow>(
    `UPDATE campaigns SET status = 'cancelled', cancelled_at = $3, updated_at = $3
      WHERE tenant_id = $1 AND id = $2 AND status IN ('draft', 'scheduled')
      RETURNING ${COLUMNS}`,
    [tenantId, id, at],
  );
  return draftOutcome(db, tenantId, id, rows[0]);
}
