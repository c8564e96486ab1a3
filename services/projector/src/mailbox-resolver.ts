import { Resolver } from 'node:dns/promises';
import type { DeliveryEvent } from '@tern/contracts';
import { domainOfAddress, type MailboxOf, providerOfDomain, providerOfMx } from '@tern/domain';

/**
 * Resolves the mailbox provider of a batch's recipients before the fold (SPEC §26): a consumer
 * domain is known from the table (`@tern/domain` mailbox-provider.ts), any other domain by its MX
 * hosts, looked up through `DNS_SERVERS` and cached (an answer for `ttlMs`, a failure for
 * `failureTtlMs`: a resolver outage slows no batch twice). A domain that cannot be resolved is
 * `other` — the fold keeps that for the email; a reprojection classifies it again.
 */
export interface MailboxResolver {
  /** The provider lookup of one batch: every domain of its `email.queued` events resolved. */
  prepare(events: readonly DeliveryEvent[]): Promise<MailboxOf>;
  /** Cached domains (for tests and the bench). */
  readonly size: number;
}

export interface MailboxResolverOptions {
  servers?: readonly string[] | undefined;
  timeoutMs?: number;
  ttlMs?: number;
  failureTtlMs?: number;
  maxEntries?: number;
  /** Lookups at once. */
  concurrency?: number;
  now?: () => number;
}

export function createMailboxResolver(opts: MailboxResolverOptions = {}): MailboxResolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: 1 });
  if (opts.servers && opts.servers.length > 0) resolver.setServers([...opts.servers]);
  const ttl = opts.ttlMs ?? 24 * 3_600_000;
  const failureTtl = opts.failureTtlMs ?? 5 * 60_000;
  const max = opts.maxEntries ?? 100_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { provider: string; until: number }>();

  async function lookup(domain: string): Promise<string> {
    const known = providerOfDomain(domain);
    if (known !== null) return known;
    const hit = cache.get(domain);
    if (hit !== undefined && hit.until > now()) return hit.provider;
    let provider: string;
    let until: number;
    try {
      const mx = await resolver.resolveMx(domain);
      provider = providerOfMx(
        domain,
        mx.map((r) => r.exchange),
      );
      until = now() + ttl;
    } catch (error) {
      const code = (error as { code?: string }).code;
      provider = 'other';
      // No such domain / no MX is an answer; anything else (timeout, SERVFAIL) is a failure.
      until = now() + (code === 'ENOTFOUND' || code === 'ENODATA' ? ttl : failureTtl);
    }
    if (cache.size >= max) cache.delete(cache.keys().next().value as string);
    cache.delete(domain);
    cache.set(domain, { provider, until });
    return provider;
  }

  return {
    get size() {
      return cache.size;
    },
    async prepare(events) {
      const domains = new Set<string>();
      for (const e of events) {
        if (e.type !== 'email.queued') continue;
        const d = domainOfAddress(e.data.toEmail);
        if (d !== null) domains.add(d);
      }
      const answers = new Map<string, string>();
      const queue = [...domains];
      const workers = Array.from({ length: Math.min(opts.concurrency ?? 16, queue.length) }, async () => {
        for (let d = queue.pop(); d !== undefined; d = queue.pop()) answers.set(d, await lookup(d));
      });
      await Promise.all(workers);
      return (toEmail) => {
        const d = domainOfAddress(toEmail);
        return d === null ? 'other' : (answers.get(d) ?? providerOfDomain(d) ?? 'other');
      };
    },
  };
}
