// Fixtures of the sending-domain tests (SPEC §20): the domains service on the test's stores and
// log, resolving through a DNS server in the test process, and the owner's side (publishing).
import type { Domain } from '@tern/contracts';
import type { EventStream } from '@tern/event-log';
import type { Logger } from '@tern/kernel';
import {
  createDnsChecker,
  createSendingDomains,
  createSigningKeys,
  type SendingDomains,
} from '@tern/sending-domains';
import { createSecretBox } from '@tern/webhooks';
import type pg from 'pg';
import type { TestDnsServer } from '../../../test/support/dns-server.js';
import { WEBHOOK_SECRETS_KEY } from './support.js';

export const BOUNCE_MX = 'bounces.tern.test';
export const SPF = 'v=spf1 ip4:127.0.0.1 ~all';

/** The sealer of DKIM keys as the runtime builds it (WEBHOOK_SECRETS_KEY, its own HKDF label). */
export const dkimSealer = () => createSecretBox(WEBHOOK_SECRETS_KEY, 'dkim keys');

export function testDomains(
  pool: pg.Pool,
  log: EventStream,
  dns: TestDnsServer,
  now: () => Date = () => new Date(),
  logger?: Logger,
  maxPerTenant?: number,
): SendingDomains {
  return createSendingDomains({
    pool,
    log,
    dns: createDnsChecker({ servers: [dns.server], timeoutMs: 500, tries: 1 }),
    sealer: dkimSealer(),
    records: { bounceSubdomain: 'tern-bounces', bounceMxHost: BOUNCE_MX, spf: SPF },
    now,
    ...(logger ? { logger } : {}),
    ...(maxPerTenant ? { maxPerTenant } : {}),
  });
}

/** The sender's key lookup, without a cache so a test sees a change at once. */
export const testSigningKeys = (pool: pg.Pool) => createSigningKeys({ pool, sealer: dkimSealer(), ttlMs: 1 });

/** Publishes a domain's records (DKIM and the return path; DMARC too when asked). */
export function publish(dns: TestDnsServer, domain: Domain, withDmarc = false): void {
  for (const r of domain.records) {
    if (r.purpose === 'dmarc' && !withDmarc) continue;
    if (r.type === 'MX') dns.mx(r.name, r.value);
    else dns.txt(r.name, r.value);
  }
}

/** The clear private key of a domain, read the way only the sender does (for "nowhere in clear" checks). */
export async function clearPrivateKey(pool: pg.Pool, tenantId: string, id: string): Promise<string> {
  const { rows } = await pool.query<{ private_key_enc: string }>(
    'SELECT private_key_enc FROM sending_domains WHERE tenant_id = $1 AND id = $2',
    [tenantId, id],
  );
  return dkimSealer().decrypt(rows[0]!.private_key_enc);
}

/**
 * Pieces of a PEM key's base64 body that would betray it anywhere: every 40-character window
 * starting on a 20-character step (a copy of the key, whole or cut, contains one).
 */
export function keyFingerprints(pem: string): string[] {
  const body = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const out: string[] = [];
  for (let i = 0; i + 40 <= body.length; i += 20) out.push(body.slice(i, i + 40));
  return out;
}

/** The fingerprints found in `text` (none, when the key is not in it). */
export const keyPiecesIn = (text: string, pieces: readonly string[]) =>
  pieces.filter((p) => text.includes(p));
