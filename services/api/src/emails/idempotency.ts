import { createHash } from 'node:crypto';
import { IDEMPOTENCY_KEY_MAX } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { Claim } from '@tern/sending';

/**
 * The HTTP side of `Idempotency-Key` (SPEC §11): the header read and validated, the request's
 * hash, and the 409s of a claim that cannot proceed. The rules, the waiting and the statements are
 * the send tables' owner's, `@tern/sending` (`createIdempotencyStore`).
 */

/** Key order does not change the body's meaning, so it does not change the hash either. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export function requestHash(route: string, body: unknown): string {
  return createHash('sha256')
    .update(route)
    .update('\n')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}

/** The header value, validated (1..256 printable characters), or undefined when absent. */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers['idempotency-key'];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw))
    throw httpError(400, 'headers.idempotency-key: send one Idempotency-Key header', {
      code: 'FST_ERR_VALIDATION',
    });
  if (raw.length < 1 || raw.length > IDEMPOTENCY_KEY_MAX || !/^[\x21-\x7e]+$/.test(raw)) {
    throw httpError(
      400,
      `headers.idempotency-key: Idempotency-Key must be 1..${IDEMPOTENCY_KEY_MAX} printable ASCII characters`,
      { code: 'FST_ERR_VALIDATION' },
    );
  }
  return raw;
}

/** A claim's answer: `claimed` or `replay` go on; a reused key or one still in flight → 409. */
export function claimOrRefuse(claim: Claim): Extract<Claim, { kind: 'claimed' | 'replay' }> {
  if (claim.kind === 'reused')
    throw httpError(409, 'Idempotency-Key was already used with a different request body', {
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
  if (claim.kind === 'in_progress')
    throw httpError(409, 'A request with this Idempotency-Key is still being processed; retry later', {
      code: 'IDEMPOTENCY_KEY_IN_PROGRESS',
    });
  return claim;
}
