import type pg from 'pg';

/**
 * The statements on `idempotency_keys` (`Idempotency-Key` of the send routes, SPEC §11): the api's
 * claim, answer and release (`idempotency-store.ts` keeps the rules and the
 * waiting), and the sender's prune of old keys. A key is per tenant and project scope.
 */

export interface IdempotencyKeyRef {
  tenantId: string;
  scope: string;
  key: string;
}

export interface IdempotencyKeyRow {
  route: string;
  request_hash: string;
  status_code: number | null;
  response: unknown;
  created_at: Date;
  /** The answer the request will give once its email.queued is in the log (issue 49, item 2). */
  planned: PlannedAnswer | null;
}

/** What a send request will answer, and the emails it is about; stored before its rows are written. */
export interface PlannedAnswer {
  statusCode: number;
  body: unknown;
  emailIds: string[];
}

/**
 * Claims the key (a row without answer): a new key, or one whose row was created at or before
 * `expiredBefore` (past its time to live), or an unanswered one created at or before `staleBefore`.
 * True when this request holds the key now.
 */
export async function claimIdempotencyKey(
  pool: pg.Pool,
  q: IdempotencyKeyRef & { route: string; hash: string; at: Date; expiredBefore: Date; staleBefore: Date },
): Promise<boolean> {
  const claimed = await pool.query(
    `INSERT INTO idempotency_keys (tenant_id, key, route, request_hash, created_at, project_scope)
     VALUES ($1, $2, $3, $4, $5, $8)
     ON CONFLICT (tenant_id, project_scope, key) DO UPDATE
       SET route = EXCLUDED.route, request_hash = EXCLUDED.request_hash, created_at = EXCLUDED.created_at,
           status_code = NULL, response = NULL
     WHERE idempotency_keys.created_at <= $6
        OR (idempotency_keys.status_code IS NULL AND idempotency_keys.planned IS NULL
            AND idempotency_keys.created_at <= $7)
     RETURNING 1`,
    [q.tenantId, q.key, q.route, q.hash, q.at, q.expiredBefore, q.staleBefore, q.scope],
  );
  return (claimed.rowCount ?? 0) > 0;
}

/** The key's row (its request and, once answered, its answer), or undefined when there is none. */
export async function idempotencyKeyRow(
  pool: pg.Pool,
  q: IdempotencyKeyRef,
): Promise<IdempotencyKeyRow | undefined> {
  const { rows } = await pool.query<IdempotencyKeyRow>(
    `SELECT route, request_hash, status_code, response, created_at, planned FROM idempotency_keys
      WHERE tenant_id = $1 AND project_scope = $3 AND key = $2`,
    [q.tenantId, q.key, q.scope],
  );
  return rows[0];
}

/** Stores the answer of the request that claimed the key. */
export async function storeIdempotencyAnswer(
  pool: pg.Pool,
  q: IdempotencyKeyRef & { statusCode: number; body: unknown },
): Promise<void> {
  await pool.query(
    `UPDATE idempotency_keys SET status_code = $3, response = $4::jsonb
      WHERE tenant_id = $1 AND project_scope = $5 AND key = $2`,
    [q.tenantId, q.key, q.statusCode, JSON.stringify(q.body), q.scope],
  );
}

/** Stores the answer the request will give, before it writes its rows (`resolveIdempotencyKey` reads it). */
export async function planIdempotencyAnswer(
  pool: pg.Pool,
  q: IdempotencyKeyRef & { planned: PlannedAnswer },
): Promise<void> {
  await pool.query(
    `UPDATE idempotency_keys SET planned = $3::jsonb
      WHERE tenant_id = $1 AND project_scope = $4 AND key = $2 AND status_code IS NULL`,
    [q.tenantId, q.key, JSON.stringify(q.planned), q.scope],
  );
}

/**
 * An unanswered key whose request planned an answer (issue 49, item 2), looked at through its
 * rows: `answered` when one of them is past `awaiting_log` (the sender consumed its email.queued:
 * the log holds the request's outcome) — the planned answer is stored as the key's answer;
 * `released` when none of them is left and the claim is older than `deadBefore` (the request
 * failed or died before its append, and its rows were deleted or swept) — the key is freed;
 * else `running`. Only the claim of `createdAt` is touched (a newer claim is another request's).
 */
export async function resolveIdempotencyKey(
  pool: pg.Pool,
  q: IdempotencyKeyRef & { createdAt: Date; planned: PlannedAnswer; deadBefore: Date },
): Promise<'answered' | 'released' | 'running'> {
  const { rows } = await pool.query<{ state: string }>(
    'SELECT state FROM outgoing_emails WHERE tenant_id = $1 AND id = ANY($2::text[])',
    [q.tenantId, q.planned.emailIds],
  );
  if (rows.some((r) => r.state !== 'awaiting_log')) {
    const answered = await pool.query(
      `UPDATE idempotency_keys SET status_code = $3, response = $4::jsonb
        WHERE tenant_id = $1 AND project_scope = $5 AND key = $2 AND status_code IS NULL AND created_at = $6`,
      [q.tenantId, q.key, q.planned.statusCode, JSON.stringify(q.planned.body), q.scope, q.createdAt],
    );
    // Not this claim any more (answered or taken over meanwhile): the caller reads the key again.
    return (answered.rowCount ?? 0) > 0 ? 'answered' : 'running';
  }
  if (rows.length === 0 && q.createdAt <= q.deadBefore) {
    await pool.query(
      `DELETE FROM idempotency_keys
        WHERE tenant_id = $1 AND project_scope = $3 AND key = $2 AND status_code IS NULL AND created_at = $4`,
      [q.tenantId, q.key, q.scope, q.createdAt],
    );
    return 'released';
  }
  return 'running';
}

/** Frees a key that has no answer yet (its request failed), so a retry can run. */
export async function releaseIdempotencyKey(pool: pg.Pool, q: IdempotencyKeyRef): Promise<void> {
  await pool.query(
    'DELETE FROM idempotency_keys WHERE tenant_id = $1 AND project_scope = $3 AND key = $2 AND status_code IS NULL',
    [q.tenantId, q.key, q.scope],
  );
}

/** Drops keys created before `before`, in a small batch (at most 1000 a call). */
export async function pruneIdempotencyKeys(pool: pg.Pool, before: Date): Promise<void> {
  await pool.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (
       SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT 1000)`,
    [before],
  );
}
