import { createPrivateKey, type KeyObject } from 'node:crypto';
import { addressDomain, signingCandidates } from '@tern/contracts';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import { bounceHostOf } from './records.js';
import type { KeySealer } from './service.js';
import { findSigningKey, verifiedNames } from './store.js';

/** What the SMTP provider signs a message with (SPEC §20). */
export interface SigningKey {
  /** `d=`: the verified domain (the From domain or a parent of it). */
  domain: string;
  /** `s=`. */
  selector: string;
  /**
   * The private key, unsealed and parsed once per cache fill (parsing the PEM costs about as much
   * as the signature itself); in memory only — a KeyObject logs as `{}` and is never kept.
   */
  privateKey: KeyObject;
  /** The domain's bounce subdomain: the envelope sender's domain. */
  bounceDomain: string;
}

/** A domain's key is sealed under another WEBHOOK_SECRETS_KEY (or altered): it cannot sign. */
export class DkimKeyUnreadableError extends Error {
  override readonly name = 'DkimKeyUnreadableError';
  constructor(readonly domain: string) {
    super(
      `the DKIM key of ${domain} cannot be unsealed with this WEBHOOK_SECRETS_KEY: delete the domain and add it again`,
    );
  }
}

export interface SigningKeys {
  /** The key that signs mail from this address for the tenant, or null when no verified domain covers it. */
  find(tenantId: string, fromAddress: string): Promise<SigningKey | null>;
}

/**
 * Looks up signing keys for the sender: the most specific verified domain among the From domain
 * and its parents. Answers (a key, or none) are kept `ttlMs` per (tenant, From domain), so a
 * steady stream of mail costs no query per message; a domain that fails or is deleted stops
 * signing within `ttlMs` (a message signed in that window still verifies while its DNS record
 * stays published).
 */
export function createSigningKeys(opts: {
  pool: pg.Pool;
  sealer: KeySealer;
  /** Default 30 s. */
  ttlMs?: number;
  /** Entries kept at most. Default 10 000. */
  max?: number;
}): SigningKeys {
  const cache = new LRUCache<string, { key: SigningKey | null }>({
    max: opts.max ?? 10_000,
    ttl: opts.ttlMs ?? 30_000,
  });
  return {
    async find(tenantId, fromAddress) {
      const fromDomain = addressDomain(fromAddress);
      if (fromDomain === null) return null;
      const cacheKey = `${tenantId}\u0000${fromDomain}`;
      const hit = cache.get(cacheKey);
      if (hit) return hit.key;
      const found = await findSigningKey(opts.pool, tenantId, signingCandidates(fromDomain));
      let key: SigningKey | null = null;
      if (found) {
        let privateKey: KeyObject;
        try {
          privateKey = createPrivateKey(opts.sealer.decrypt(found.privateKeyEnc));
        } catch {
          throw new DkimKeyUnreadableError(found.name);
        }
        key = {
          domain: found.name,
          selector: found.selector,
          privateKey,
          bounceDomain: bounceHostOf(found.records) ?? found.name,
        };
      }
      cache.set(cacheKey, { key });
      return key;
    },
  };
}

/**
 * The From domains of a set of addresses that no verified domain of the tenant covers (SPEC §20's
 * production refusal), each named once, in the order given.
 */
export async function unverifiedDomains(
  pool: Pick<pg.Pool, 'query'>,
  tenantId: string,
  fromAddresses: readonly string[],
): Promise<string[]> {
  const domains = [...new Set(fromAddresses.map((a) => addressDomain(a) ?? a))];
  const verified = await verifiedNames(pool, tenantId, [...new Set(domains.flatMap(signingCandidates))]);
  return domains.filter((d) => !signingCandidates(d).some((c) => verified.has(c)));
}

/**
 * True when `host` is the bounce host (return-path MX name, SPEC §20) of a verified domain of any
 * tenant: the bounce mailbox takes mail for it (SPEC §21).
 */
export async function isVerifiedBounceHost(pool: Pick<pg.Pool, 'query'>, host: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `SELECT 1 FROM sending_domains WHERE status = 'verified' AND records @> $1::jsonb LIMIT 1`,
    [JSON.stringify([{ purpose: 'return_path_mx', name: host.toLowerCase() }])],
  );
  return (rowCount ?? 0) > 0;
}
