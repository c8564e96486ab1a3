import { Resolver } from 'node:dns/promises';
import { signingCandidates } from '@tern/contracts';
import type { ExpectedRecord } from './records.js';

/** What the DNS says about one expected record. */
export type RecordCheck =
  /** Found with exactly the expected value. */
  | { status: 'verified' }
  /** Nothing of that kind at the name (yet). */
  | { status: 'pending' }
  /** A record of that kind is there with another value (what was found, for the reason). */
  | { status: 'failed'; found: string }
  /** The resolver did not answer (timeout, refused, SERVFAIL): the record's state is unknown. */
  | { status: 'unknown'; error: string };

export interface DnsChecker {
  /** One result per record, in order. Never throws: a lookup that fails is `unknown`. */
  check(records: readonly ExpectedRecord[]): Promise<RecordCheck[]>;
}

export interface DnsCheckerOptions {
  /** DNS_SERVERS: `ip[:port]` entries (`[v6]:port` for IPv6); absent → the system's resolvers. */
  servers?: readonly string[] | undefined;
  /** Per query attempt. Default 2 s. */
  timeoutMs?: number;
  /** Attempts per query. Default 2. */
  tries?: number;
}

/** Answers that mean "no such record": the name does not exist, or has nothing of that type. */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);

const codeOf = (error: unknown) => String((error as { code?: unknown }).code ?? (error as Error).message);

/** TXT strings joined per record (a long DKIM key is published as several ≤ 255-byte strings). */
async function txt(resolver: Resolver, name: string): Promise<string[] | null> {
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (error) {
    if (ABSENT.has(codeOf(error))) return null;
    throw error;
  }
}

async function mx(resolver: Resolver, name: string): Promise<string[] | null> {
  try {
    return (await resolver.resolveMx(name)).map((r) => r.exchange.toLowerCase().replace(/\.$/, ''));
  } catch (error) {
    if (ABSENT.has(codeOf(error))) return null;
    throw error;
  }
}

/**
 * Compares each record with the DNS through `node:dns` (SPEC §20): exactly (TXT strings joined,
 * no trimming, no case folding; an MX host compared without case or trailing dot, any priority).
 * - DKIM: any TXT at the name with another value → `failed` (the name is Tern's own selector).
 * - SPF: a `v=spf1` TXT with another value → `failed`; other TXT at the bounce name are ignored.
 * - MX: an MX to another host → `failed`.
 * - DMARC: any `v=DMARC1` TXT at `_dmarc.<domain>` or at a parent's `_dmarc` → `verified`, else
 *   `pending`; never `failed` (the value is a suggestion; the policy is the owner's).
 */
export function createDnsChecker(opts: DnsCheckerOptions = {}): DnsChecker {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
  if (opts.servers && opts.servers.length > 0) resolver.setServers([...opts.servers]);

  async function checkOne(record: ExpectedRecord): Promise<RecordCheck> {
    try {
      switch (record.purpose) {
        case 'dkim': {
          const found = await txt(resolver, record.name);
          if (found === null || found.length === 0) return { status: 'pending' };
          return found.includes(record.value)
            ? { status: 'verified' }
            : { status: 'failed', found: found[0]! };
        }
        case 'return_path_spf': {
          const spf = (await txt(resolver, record.name))?.filter((v) => /^v=spf1(\s|$)/i.test(v)) ?? [];
          if (spf.length === 0) return { status: 'pending' };
          return spf.includes(record.value) ? { status: 'verified' } : { status: 'failed', found: spf[0]! };
        }
        case 'return_path_mx': {
          const hosts = await mx(resolver, record.name);
          if (hosts === null || hosts.length === 0) return { status: 'pending' };
          const wanted = record.value.toLowerCase().replace(/\.$/, '');
          return hosts.includes(wanted) ? { status: 'verified' } : { status: 'failed', found: hosts[0]! };
        }
        case 'inbound_mx': {
          const hosts = await mx(resolver, record.name);
          if (hosts === null || hosts.length === 0) return { status: 'pending' };
          const wanted = (record.value.split(/\s+/).pop() ?? '').toLowerCase().replace(/\.$/, '');
          return hosts.includes(wanted) ? { status: 'verified' } : { status: 'failed', found: hosts[0]! };
        }
        case 'dmarc': {
          const domain = record.name.replace(/^_dmarc\./, '');
          for (const candidate of signingCandidates(domain)) {
            const found = await txt(resolver, `_dmarc.${candidate}`);
            if (found?.some((v) => /^v=DMARC1(\s*;|\s*$)/i.test(v))) return { status: 'verified' };
          }
          return { status: 'pending' };
        }
      }
    } catch (error) {
      return { status: 'unknown', error: codeOf(error) };
    }
  }

  return { check: (records) => Promise.all(records.map(checkOne)) };
}
