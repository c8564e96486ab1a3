import { bindPool, type Repository } from '@tern/kernel';
import type pg from 'pg';
import {
  claimIdempotencyKey,
  idempotencyKeyRow,
  type PlannedAnswer,
  planIdempotencyAnswer,
  releaseIdempotencyKey,
  resolveIdempotencyKey,
  storeIdempotencyAnswer,
} from './idempotency-keys.js';

/**
 * `Idempotency-Key` of POST /emails/send|batch (SPEC §11): per tenant and project scope (the
 * project a key is bound to, '' for a tenant-wide credential; issue 24, item 6), 24 h. The first request
 * claims the key (a row without response); a repeat with the same body gets the stored answer,
 * with another body `reused`. A repeat that arrives while the first still runs waits for its
 * answer (bounded; then `in_progress`), so concurrent duplicates send once and all get the same
 * answer. No HTTP here: the api's `emails/idempotency.ts` reads the header and answers 409.
 */

export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** A claim without an answer (nor a planned one) this old belongs to a request that died: the key is free again. */
const STALE_CLAIM_MS = 60_000;
/**
 * A claim with a planned answer whose rows are all gone this long after it was made: its request
 * failed or died before the log took its email.queued (the rows were deleted, or swept by the
 * sender), so a retry runs (issue 49, item 2). Longer than a request's append may take.
 */
const DEAD_CLAIM_MS = 30_000;

export interface StoredAnswer {
  statusCode: number;
  body: unknown;
}

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; answer: StoredAnswer }
  /** The key was used with another route or body. */
  | { kind: 'reused' }
  /** The first request still runs after the wait. */
  | { kind: 'in_progress' };

export async function claimKey(
  pool: pg.Pool,
  q: {
    tenantId: string;
    scope: string;
    key: string;
    route: string;
    hash: string;
    now: () => Date;
    waitMs?: number;
  },
): Promise<Claim> {
  const deadline = Date.now() + (q.waitMs ?? 10_000);
  for (;;) {
    const at = q.now();
    const claimed = await claimIdempotencyKey(pool, {
      tenantId: q.tenantId,
      scope: q.scope,
      key: q.key,
      route: q.route,
      hash: q.hash,
      at,
      expiredBefore: new Date(at.getTime() - IDEMPOTENCY_TTL_MS),
      staleBefore: new Date(at.getTime() - STALE_CLAIM_MS),
    });
    if (claimed) return { kind: 'claimed' };
    const row = await idempotencyKeyRow(pool, q);
    if (row === undefined) continue; // released meanwhile: claim again
    if (row.route !== q.route || row.request_hash !== q.hash) {
      return { kind: 'reused' };
    }
    if (row.status_code !== null)
      return { kind: 'replay', answer: { statusCode: row.status_code, body: row.response } };
    // The first request planned its answer: the log may already hold its outcome (issue 49, item 2).
    if (row.planned !== null) {
      const resolved = await resolveIdempotencyKey(pool, {
        tenantId: q.tenantId,
        scope: q.scope,
        key: q.key,
        createdAt: row.created_at,
        planned: row.planned,
        deadBefore: new Date(at.getTime() - DEAD_CLAIM_MS),
      });
      if (resolved === 'answered')
        return { kind: 'replay', answer: { statusCode: row.planned.statusCode, body: row.planned.body } };
      if (resolved === 'released') continue;
    }
    if (Date.now() >= deadline) {
      return { kind: 'in_progress' };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function storeAnswer(
  pool: pg.Pool,
  q: { tenantId: string; scope: string; key: string; answer: StoredAnswer },
): Promise<void> {
  await storeIdempotencyAnswer(pool, {
    tenantId: q.tenantId,
    scope: q.scope,
    key: q.key,
    statusCode: q.answer.statusCode,
    body: q.answer.body,
  });
}

/** The answer the request will give, stored before it writes its rows (a retry resolves to it). */
export async function planAnswer(
  pool: pg.Pool,
  q: { tenantId: string; scope: string; key: string; planned: PlannedAnswer },
): Promise<void> {
  await planIdempotencyAnswer(pool, q);
}

/** The request failed before an answer: free the key so a retry can run. */
export async function releaseKey(
  pool: pg.Pool,
  q: { tenantId: string; scope: string; key: string },
): Promise<void> {
  await releaseIdempotencyKey(pool, q);
}

const idempotencyStatements = {
  claim: claimKey,
  storeAnswer,
  plan: planAnswer,
  release: releaseKey,
};

/** The Idempotency-Key repository: the functions above over one pool (the api's send routes). */
export type IdempotencyStore = Repository<typeof idempotencyStatements>;

export function createIdempotencyStore(pool: pg.Pool): IdempotencyStore {
  return bindPool(pool, idempotencyStatements);
}
