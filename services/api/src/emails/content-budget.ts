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
  /** Bytes held now (tests, metrics). */
  held(): number;
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
  return {
    take(tenantId, bytes) {
      const mine = byTenant.get(tenantId) ?? 0;
      // A request alone larger than a bound still passes when nothing else is held (the body limit
      // refuses it as 413 otherwise); it never waits forever.
      if ((total > 0 && total + bytes > opts.totalBytes) || (mine > 0 && mine + bytes > opts.perTenantBytes))
        return null;
      total += bytes;
      byTenant.set(tenantId, mine + bytes);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total -= bytes;
        const left = (byTenant.get(tenantId) ?? bytes) - bytes;
        if (left <= 0) byTenant.delete(tenantId);
        else byTenant.set(tenantId, left);
      };
    },
    held: () => total,
  };
}

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
