import { claimDue } from '@tern/jobs';
import { withTransaction } from '@tern/kernel';
import type pg from 'pg';
import { type Recipient, reachableContactSql } from '../contacts/store.js';
import { compileSegmentFilter, type SegmentFilter } from '../segments/filter.js';
import { SEGMENT_WORK_MEM } from '../segments/store.js';
import { topicSubscribedSql } from '../topics/store.js';
import type { CampaignRow } from './store.js';

/**
 * The statements of the campaign fan-out (SPEC §15; the job is services/worker): the claim of a
 * due campaign, a chunk of its audience, the chunk's `bulk_emails` rows and the move of its cursor.
 */

/** The table whose rows carry the fan-out's lease (`createLeasedJob` hands them back on stop). */
export const FANOUT_TABLE = 'campaigns';

/**
 * Takes a campaign that fell due (`scheduled` with `scheduled_at <= at`, or `sending` whose lease
 * lapsed) with `FOR UPDATE SKIP LOCKED` and a lease; the first claim stamps `snapshot_at`.
 */
export async function claimCampaign(
  pool: pg.Pool,
  owner: string,
  leaseUntil: Date,
  at: Date,
): Promise<CampaignRow | null> {
  const rows = await claimDue<CampaignRow>(
    pool,
    {
      table: 'campaigns',
      alias: 'c',
      keys: ['tenant_id', 'id'],
      due: `((status = 'scheduled' AND scheduled_at <= $3) OR status = 'sending')
            AND (lease_until IS NULL OR lease_until < $3)`,
      orderBy: 'scheduled_at NULLS FIRST',
      limit: 1,
      set: `status = 'sending', lease_owner = $1, lease_until = $2, snapshot_at = COALESCE(c.snapshot_at, $3),
            updated_at = $3`,
    },
    [owner, leaseUntil, at],
  );
  return rows[0] ?? null;
}

/**
 * A segment campaign's recipients (SPEC §27), listed once: the contacts its segment's filter
 * matches at the snapshot (engagement windows end at `snapshot_at`; contacts created later are
 * out), written to `campaign_recipients` with `recipients_ready` in one transaction — only while
 * the lease is `owner`'s. A crash before the commit leaves nothing; the next claim lists again.
 * A segment deleted meanwhile reaches nobody. Resolves with the row as updated, or null when the
 * lease was lost.
 */
export async function listSegmentRecipients(
  pool: pg.Pool,
  c: CampaignRow,
  owner: string,
): Promise<CampaignRow | null> {
  if (c.segment_id === null || c.recipients_ready) return c;
  return withTransaction(pool, async (client) => {
    await client.query(`SET LOCAL work_mem = '${SEGMENT_WORK_MEM}'`);
    const seg = await client.query<{ filter: SegmentFilter }>(
      'SELECT filter FROM segments WHERE tenant_id = $1 AND id = $2',
      [c.tenant_id, c.segment_id],
    );
    const filter = seg.rows[0]?.filter ?? null;
    if (filter !== null) {
      const params: unknown[] = [];
      const where = compileSegmentFilter(filter, {
        tenantId: c.tenant_id,
        params,
        at: c.snapshot_at ?? undefined,
      });
      const n = params.length;
      await client.query(
        `INSERT INTO campaign_recipients (tenant_id, campaign_id, contact_id)
         SELECT c.tenant_id, $${n + 1}, c.id FROM contacts c WHERE ${where} AND c.created_at <= $${n + 2}
         ON CONFLICT DO NOTHING`,
        [...params, c.id, c.snapshot_at],
      );
    }
    const { rowCount } = await client.query(
      `UPDATE campaigns SET recipients_ready = true, segment_filter = $3
        WHERE tenant_id = $1 AND id = $2 AND lease_owner = $4 AND status = 'sending'`,
      [c.tenant_id, c.id, filter === null ? null : JSON.stringify(filter), owner],
    );
    if ((rowCount ?? 0) === 0) throw new LeaseLost();
    return { ...c, recipients_ready: true, segment_filter: filter };
  }).catch((error: unknown) => {
    if (error instanceof LeaseLost) return null;
    throw error;
  });
}

class LeaseLost extends Error {}

/**
 * The next `chunkSize` contacts after `cursor` (keyset on the contact id) that are in the
 * audience at the snapshot (or listed for the segment), reachable and subscribed to the topic
 * the campaign names — or that already got this campaign's email (a redo after a crash keeps
 * the same recipients).
 */
export async function fanoutChunk(
  pool: Pick<pg.Pool, 'query'>,
  c: CampaignRow,
  cursor: string | null,
  source: string,
  chunkSize: number,
): Promise<Recipient[]> {
  const params: unknown[] = [c.tenant_id, cursor, source, chunkSize];
  const p = (v: unknown) => `$${params.push(v)}`;
  const members =
    c.segment_id === null
      ? `ct.audiences @> ARRAY[${p(c.audience)}::text] AND ct.created_at <= ${p(c.snapshot_at)}`
      : `EXISTS (SELECT 1 FROM campaign_recipients r
                  WHERE r.tenant_id = ct.tenant_id AND r.campaign_id = ${p(c.id)} AND r.contact_id = ct.id)`;
  const topic = c.topic_id === null ? 'true' : topicSubscribedSql('ct', '$1', `${p(c.topic_id)}::text`);
  const { rows } = await pool.query<Recipient>(
    `SELECT ct.id, ct.email, ct.first_name, ct.last_name, ct.attributes
       FROM contacts ct
      WHERE ct.tenant_id = $1 AND ${members}
        AND ($2::text IS NULL OR ct.id > $2)
        AND ((${reachableContactSql('ct')} AND ${topic})
             OR EXISTS (SELECT 1 FROM bulk_emails b
                         WHERE b.tenant_id = ct.tenant_id AND b.source = $3 AND b.contact_id = ct.id))
      ORDER BY ct.id
      LIMIT $4`,
    params,
  );
  return rows;
}

/** One email of a chunk: its id, its contact, and why it could not be composed ('' when it was). */
export interface ChunkEmail {
  id: string;
  contact: string;
  failedReason: string;
}

/** The chunk's `bulk_emails` rows (step 0), `ON CONFLICT DO NOTHING`: a redone chunk keeps its rows. */
export async function recordChunk(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  source: string,
  at: Date,
  emails: readonly ChunkEmail[],
): Promise<void> {
  await pool.query(
    `INSERT INTO bulk_emails (tenant_id, email_id, source, step, contact_id, created_at, failed_reason)
     SELECT $1, e, $2, 0, ct, $3, NULLIF(why, '') FROM unnest($4::text[], $5::text[], $6::text[]) AS u(e, ct, why)
     ON CONFLICT (tenant_id, email_id) DO NOTHING`,
    [
      tenantId,
      source,
      at,
      emails.map((e) => e.id),
      emails.map((e) => e.contact),
      emails.map((e) => e.failedReason),
    ],
  );
}

/**
 * Moves the cursor past the chunk (only while the lease is `owner`'s): the last chunk marks the
 * campaign `sent`, another renews the lease and the pace. False when the lease was lost.
 */
export async function advanceFanout(
  pool: Pick<pg.Pool, 'query'>,
  c: CampaignRow,
  step: {
    done: boolean;
    cursor: string | null;
    at: Date;
    owner: string;
    leaseUntil: Date;
    nextDue: Date | null;
  },
): Promise<boolean> {
  const { done, cursor, at, owner } = step;
  const { rowCount } = await pool.query(
    done
      ? `UPDATE campaigns SET fanout_cursor = $3, status = 'sent', sent_at = $4, lease_owner = NULL,
                lease_until = NULL, updated_at = $4
          WHERE tenant_id = $1 AND id = $2 AND lease_owner = $5 AND status = 'sending'`
      : `UPDATE campaigns SET fanout_cursor = $3, lease_until = $6, next_due_at = $7, updated_at = $4
          WHERE tenant_id = $1 AND id = $2 AND lease_owner = $5 AND status = 'sending'`,
    done
      ? [c.tenant_id, c.id, cursor, at, owner]
      : [c.tenant_id, c.id, cursor, at, owner, step.leaseUntil, step.nextDue],
  );
  const ours = (rowCount ?? 0) > 0;
  // A sent campaign is never fanned out again: its segment's list has served.
  if (ours && done && c.segment_id !== null)
    await pool.query('DELETE FROM campaign_recipients WHERE tenant_id = $1 AND campaign_id = $2', [
      c.tenant_id,
      c.id,
    ]);
  return ours;
}
