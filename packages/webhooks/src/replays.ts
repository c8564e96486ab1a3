import type { WebhookReplay } from '@tern/contracts';
import { claimDue } from '@tern/jobs';
import type pg from 'pg';

/**
 * SQL of webhook replays (SPEC §17), the owner of `webhook_replays`: the api's `/webhooks*`
 * routes request them, the dispatcher's replay job claims, advances and finishes them.
 */

type Queryable = Pick<pg.Pool, 'query'>;

export async function insertReplay(
  db: Queryable,
  tenantId: string,
  r: { id: string; endpointId: string; since: Date; until: Date },
  now: Date,
): Promise<WebhookReplay> {
  await db.query(
    `INSERT INTO webhook_replays (id, tenant_id, endpoint_id, since, until, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [r.id, tenantId, r.endpointId, r.since, r.until, now],
  );
  return {
    id: r.id,
    webhookId: r.endpointId,
    since: r.since.toISOString(),
    until: r.until.toISOString(),
    after: null,
    through: null,
    hasMore: false,
    status: 'pending',
  };
}

/**
 * Inserts a replay of the event stream's events in (`after`, `through`] (SPEC §25). An unfinished
 * replay of the same endpoint and cursor is answered instead of a second one (a retried request
 * queues nothing twice); `hasMore` is the caller's (the 10 000-event bound of one replay).
 */
export async function insertCursorReplay(
  db: Queryable,
  tenantId: string,
  r: { id: string; endpointId: string; after: bigint; through: bigint; hasMore: boolean },
  now: Date,
): Promise<WebhookReplay> {
  const { rows } = await db.query<{
    id: string;
    through_seq: string;
    has_more: boolean;
    status: WebhookReplay['status'];
  }>(
    `WITH made AS (
       INSERT INTO webhook_replays (id, tenant_id, endpoint_id, after_seq, through_seq, has_more, created_at)
       VALUES ($1, $2, $3, $4, $5, $7, $6)
       ON CONFLICT (endpoint_id, after_seq) WHERE status <> 'done' AND after_seq IS NOT NULL DO NOTHING
       RETURNING id, through_seq::text, has_more, status)
     SELECT * FROM made
     UNION ALL
     SELECT id, through_seq::text, has_more, status FROM webhook_replays
      WHERE endpoint_id = $3 AND after_seq = $4 AND status <> 'done' AND NOT EXISTS (SELECT 1 FROM made)`,
    [r.id, tenantId, r.endpointId, r.after.toString(), r.through.toString(), now, r.hasMore],
  );
  const row = rows[0];
  // Finished between the conflict and the read (rare): ask again.
  if (!row) return insertCursorReplay(db, tenantId, r, now);
  return {
    id: row.id,
    webhookId: r.endpointId,
    since: null,
    until: null,
    after: r.after.toString(),
    through: row.through_seq,
    hasMore: row.has_more,
    status: row.status,
  };
}

/** A claimed replay: its endpoint and its window (`since`, `until`) or cursor range (`after_seq`, `through_seq`). */
export interface ClaimedReplay {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  since: Date | null;
  until: Date | null;
  after_seq: string | null;
  through_seq: string | null;
}

/** Claims the oldest replay not done (and not leased), leasing it until `leaseUntil`. */
export async function claimReplay(db: Queryable, at: Date, leaseUntil: Date): Promise<ClaimedReplay | null> {
  const rows = await claimDue<ClaimedReplay>(
    db,
    {
      table: 'webhook_replays',
      alias: 'r',
      due: `status <> 'done' AND (claimed_until IS NULL OR claimed_until < $1)`,
      orderBy: 'created_at',
      limit: 1,
      set: `status = 'running', claimed_until = $2`,
      returning: 'r.id, r.tenant_id, r.endpoint_id, r.since, r.until, r.after_seq::text, r.through_seq::text',
    },
    [at, leaseUntil],
  );
  return rows[0] ?? null;
}

/** Extends a running replay's lease and counts the deliveries it enqueued. */
export async function noteReplayProgress(
  db: Queryable,
  id: string,
  leaseUntil: Date,
  enqueued: number,
): Promise<void> {
  await db.query('UPDATE webhook_replays SET claimed_until = $2, enqueued = enqueued + $3 WHERE id = $1', [
    id,
    leaseUntil,
    enqueued,
  ]);
}

/** Marks a replay done. */
export async function finishReplay(db: Queryable, id: string, now: Date): Promise<void> {
  await db.query(`UPDATE webhook_replays SET status = 'done', finished_at = $2 WHERE id = $1`, [id, now]);
}

/** Deletes the replays done before `cutoff`. */
export async function deleteFinishedReplays(db: Queryable, cutoff: Date): Promise<void> {
  await db.query(`DELETE FROM webhook_replays WHERE status = 'done' AND finished_at < $1`, [cutoff]);
}
