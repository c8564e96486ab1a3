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
    status: 'pending',
  };
}

/** A claimed replay: its endpoint and window. */
export interface ClaimedReplay {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  since: Date;
  until: Date;
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
      returning: 'r.id, r.tenant_id, r.endpoint_id, r.since, r.until',
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
