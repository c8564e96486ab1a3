import { addressDomain, parseMailbox } from '@tern/contracts';
import { httpError } from '@tern/http';
import { unverifiedDomains } from '@tern/sending-domains';
import type pg from 'pg';

/** Whether sends must come from verified domains (SPEC §20); the runtime decides from the config. */
export interface DomainPolicy {
  /** `NODE_ENV=production` with a real provider (SMTP_URL): a From domain not verified → 400. */
  requireVerified: boolean;
}

/** How many fields one refusal names per domain before "and N more". */
const FIELDS_SHOWN = 5;

/**
 * SPEC §20: with `requireVerified`, every `from` must be covered by a verified domain of the
 * tenant (its domain or a parent). Otherwise 400 `DOMAIN_NOT_VERIFIED` naming each domain and the
 * fields that use it, and nothing is queued (the caller checks before it writes anything).
 * Development and the sandbox accept any domain: then this is a no-op without a query.
 */
export async function assertFromVerified(
  pool: Pick<pg.Pool, 'query'>,
  policy: DomainPolicy | undefined,
  tenantId: string,
  froms: readonly { field: string; from: string }[],
): Promise<void> {
  if (!policy?.requireVerified || froms.length === 0) return;
  const addresses = froms.map((f) => parseMailbox(f.from)?.address ?? f.from);
  const unverified = new Set(await unverifiedDomains(pool, tenantId, addresses));
  if (unverified.size === 0) return;
  const fieldsOf = new Map<string, string[]>();
  froms.forEach((f, i) => {
    const domain = addressDomain(addresses[i]!) ?? addresses[i]!;
    if (unverified.has(domain)) fieldsOf.set(domain, [...(fieldsOf.get(domain) ?? []), f.field]);
  });
  const parts = [...fieldsOf].map(([domain, fields]) => {
    const shown = fields.slice(0, FIELDS_SHOWN).join(', ');
    const more = fields.length > FIELDS_SHOWN ? ` and ${fields.length - FIELDS_SHOWN} more` : '';
    return `${shown}${more}: the domain ${domain} is not verified (add it with POST /domains and publish its DNS records)`;
  });
  throw httpError(400, parts.join('; '), { code: 'DOMAIN_NOT_VERIFIED', domains: [...fieldsOf.keys()] });
}

/** `assertFromVerified` with its pool and policy bound (`ApiRouteDeps.fromDomains`). */
export interface FromDomainCheck {
  assertVerified(tenantId: string, froms: readonly { field: string; from: string }[]): Promise<void>;
}

export function createFromDomainCheck(
  pool: Pick<pg.Pool, 'query'>,
  policy: DomainPolicy | undefined,
): FromDomainCheck {
  return { assertVerified: (tenantId, froms) => assertFromVerified(pool, policy, tenantId, froms) };
}
