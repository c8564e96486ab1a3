import { parsePosition } from '@tern/contracts';
import { httpError } from '@tern/http';
import { eventsProjected } from '@tern/read-models';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { credentialOf } from './credentials.js';
import type { ApiRouteDeps } from './route-deps.js';
import { errorResponse } from './schemas.js';

/**
 * Read-your-writes (SPEC §25, issue 49 item 5). Every accepted send answers `position`: its last
 * event on each partition of the log it went to (`positionOfWrite`; one id for one event, or on
 * the Postgres-table log). A read carrying `Tern-Consistent-With: <position>` waits until the read
 * models have folded every event it lists (they are written in one transaction, the stream with
 * them; each partition is folded in order, so the write's earlier events are in too), at most
 * `CONSISTENCY_WAIT_MS`, then answers; past the wait → 503 with `Retry-After`, never an answer
 * older than the write (no 404 for an email it accepted).
 */
export const CONSISTENCY_HEADER = 'tern-consistent-with';
export const CONSISTENCY_WAIT_MS = 5_000;
const POLL_MS = 50;

export const consistencyHeaderDoc = z
  .object({
    'tern-consistent-with': z
      .string()
      .optional()
      .meta({
        description:
          'A write’s `position` (one event id, or several joined by `,`: its last event on each partition of the log): ' +
          'the answer waits (≤ 5 s) until the read models include that whole write, else 503 with `Retry-After`.',
        example: 'em_4Hs9dK2mQ7wE1rT6yU3iO8pA:queued,em_7Hc2WnQ5rT1vX9kL3mB6zYpa:queued',
      }),
  })
  .loose();

/** A preHandler: holds the read until the position given is projected (or answers 503). */
export function awaitConsistency(deps: Pick<ApiRouteDeps, 'pool'>, waitMs = CONSISTENCY_WAIT_MS) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const raw = request.headers[CONSISTENCY_HEADER];
    if (raw === undefined) return;
    const ids = parsePosition(Array.isArray(raw) ? raw.join(',') : raw);
    if (ids === null)
      throw httpError(400, 'headers.tern-consistent-with: must be a `position` a write answered', {
        code: 'FST_ERR_VALIDATION',
      });
    const { tenantId } = credentialOf(request);
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (await eventsProjected(deps.pool, tenantId, ids)) return;
      if (Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    throw httpError(
      503,
      'The read models have not reached this position yet; retry after Retry-After',
      { code: 'NOT_CONSISTENT_YET' },
      { 'retry-after': '1' },
    );
  };
}

/** The documented 503 of a read past its wait. */
export const notConsistentYet = errorResponse(
  503,
  'The read models have not reached the `Tern-Consistent-With` position within the wait; retry after `Retry-After`.',
  'The read models have not reached this position yet; retry after Retry-After',
  { code: 'NOT_CONSISTENT_YET' },
);
