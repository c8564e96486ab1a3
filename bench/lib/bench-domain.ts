/**
 * A sending domain verified for a bench tenant (SPEC §20), as the DKIM benches (send, smtp-out)
 * need it: added and verified against a DNS checker that answers every record, with its signing
 * key and the key lookup the sender is given.
 */

import type { EventStream } from '@tern/event-log';
import {
  createSendingDomains,
  createSigningKeys,
  type DnsChecker,
  type SigningKeys,
} from '@tern/sending-domains';
import { createSecretBox } from '@tern/webhooks';
import type pg from 'pg';

const allVerified: DnsChecker = {
  check: async (records) => records.map(() => ({ status: 'verified' as const })),
};

export async function verifiedBenchDomain(opts: {
  pool: pg.Pool;
  log: EventStream;
  tenantId: string;
  tag: string;
  /** Seals the domain's DKIM key (what WEBHOOK_SECRETS_KEY does in the runtime). */
  secret: string;
}) {
  const { pool, log, tenantId, tag } = opts;
  const sealer = createSecretBox(opts.secret, 'dkim keys');
  const domains = createSendingDomains({
    pool,
    log,
    dns: allVerified,
    sealer,
    records: { bounceSubdomain: 'tern-bounces', bounceMxHost: 'bounces.tern.test', spf: 'v=spf1 ~all' },
    now: () => new Date(),
  });
  const domainName = `bench-${tag}.example.test`;
  const added = await domains.add(tenantId, `dom_bench${tag}`, domainName);
  if (typeof added === 'string' || (await domains.verify(tenantId, added.id))?.status !== 'verified')
    throw new Error('bench domain not verified');
  const signingKeys: SigningKeys = createSigningKeys({ pool, sealer });
  const key = await signingKeys.find(tenantId, `x@${domainName}`);
  if (!key) throw new Error('no signing key for the bench domain');
  return { domainName, key, signingKeys };
}
