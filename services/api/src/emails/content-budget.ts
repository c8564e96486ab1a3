import { randomUUID } from 'node:crypto';
import { httpError } from '@tern/http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { credentialOf } from '../credentials.js';

/**
 * Bytes of message content in flight in the send routes, in total and per tenant (issue 40 item
 * 8: three concurrent 40 MB sends took the process from 364 to 955 MiB of RSS, and it stayed). A
 * request holds its declared `Content-Length` (or the body limit when it declares none) from
 * before its body is read until its answer is sent; one that would pass a bound is answered 429
 * `RATE_LIMITED` with `Retry-After` before a byte of its body is read. A tenant alone can hold at
 * most `perTenantBytes`, so one tenant's large mail never fills the whole budget.
 */
export interface ContentBudget {
  /** Takes `bytes` for `tenantId`: the release function, or null when a bound would be passed. */
  take(tenantId: string, bytes: number): (() => void) | null;
  /**
   * A hold that grows as a message's bytes arrive (SMTP DATA, whose size is known only at its end):
   * each `grow` is checked against the bounds as `take` is, counting the hold's own bytes as free.
   */
  open(tenantId: string): ContentHold;
  /** Bytes held now (tests, metrics). */
  held(): number;
}

export interface ContentHold {
  /** Adds `bytes` to the hold: false (nothing added) when a bound would be passed. */
  grow(bytes: number): boolean;
  /** Gives every byte of the hold back; a second call does nothing. */
  release(): void;
}

export interface ContentBudgetOptions {
  /** SEND_CONTENT_MAX_BYTES: the most bytes of content in flight in the process. */
  totalBytes: number;
  /** SEND_CONTENT_MAX_BYTES_PER_TENANT: the most one tenant may have in flight. */
  perTenantBytes: number;
}

/** 96 MiB in all, 48 MiB a tenant: two largest messages (40 MB) at once, one per tenant. */
export const DEFAULT_CONTENT_BUDGET: ContentBudgetOptions = {
  totalBytes: 96 * 1024 * 1024,
  perTenantBytes: 48 * 1024 * 1024,
};

export function createContentBudget(opts: ContentBudgetOptions = DEFAULT_CONTENT_BUDGET): ContentBudget {
  let total = 0;
  const byTenant = new Map<string, number>();
  const open = (tenantId: string): ContentHold => {
    let own = 0;
    let released = false;
    return {
      grow(bytes) {
        if (released) return false;
        const mine = byTenant.get(tenantId) ?? 0;
        // A message alone larger than a bound still passes when nothing else is held (the size
        // limit refuses it otherwise); it never waits forever.
        if (
          (total - own > 0 && total + bytes > opts.totalBytes) ||
          (mine - own > 0 && mine + bytes > opts.perTenantBytes)
        )
          return false;
        own += bytes;
        total += bytes;
        byTenant.set(tenantId, mine + bytes);
        return true;
      },
      release() {
        if (released) return;
        released = true;
        total -= own;
        const left = (byTenant.get(tenantId) ?? own) - own;
        if (left <= 0) byTenant.delete(tenantId);
        else byTenant.set(tenantId, left);
      },
    };
  };
  return {
    take(tenantId, bytes) {
      const hold = open(tenantId);
      return hold.grow(bytes) ? hold.release : null;
    },
    open,
    held: () => total,
  };
}

/**
 * The header by which this process's own SMTP submission marks the `POST /emails/send` it injects
 * for a message whose bytes it already holds in the budget (so they are not counted twice). Its
 * value is random per process: no client can present it.
 */
const HELD_BY_SUBMISSION = randomUUID();
export const contentHeldHeaders = (): Record<string, string> => ({
  'x-tern-content-held': HELD_BY_SUBMISSION,
});

const releases = new WeakMap<FastifyRequest, () => void>();

/**
 * The route hooks holding the budget: `preParsing` takes it (auth has run, the body is unread),
 * `onResponse` and `onRequestAbort` give it back.
 */
export function contentBudgetHooks(budget: ContentBudget, bodyLimit: number) {
  const release = async (request: FastifyRequest) => {
    releases.get(request)?.();
    releases.delete(request);
  };
  return {
    preParsing: async (request: FastifyRequest, _reply: FastifyReply) => {
      if (request.headers['x-tern-content-held'] === HELD_BY_SUBMISSION) return;
      const declared = Number(request.headers['content-length']);
      const bytes = Number.isFinite(declared) && declared > 0 ? Math.min(declared, bodyLimit) : bodyLimit;
      const free = budget.take(credentialOf(request).tenantId, bytes);
      if (free === null)
        throw httpError(
          429,
          'Too much message content in flight: retry after Retry-After seconds',
          { code: 'RATE_LIMITED' },
          { 'retry-after': '2' },
        );
      releases.set(request, free);
    },
    onResponse: release,
    onRequestAbort: release,
  };
}
