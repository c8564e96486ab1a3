import type pg from 'pg';
import { tenantOfSlug } from './store.js';

/**
 * Who a recipient address belongs to (SPEC §24): `<anything>@<slug>.<INBOUND_DOMAIN>` is the
 * tenant the slug was issued to; an address at a receiving domain (§20, `receiving: true`, its
 * `inbound_mx` record verified) is each tenant's that receives there. Anything else: nobody.
 */
export function createRecipientResolver(opts: {
  pool: pg.Pool;
  inboundDomain?: string | undefined;
  receivingTenants(host: string): Promise<string[]>;
}) {
  const suffix = opts.inboundDomain ? `.${opts.inboundDomain.toLowerCase()}` : undefined;
  // A slug, once issued, names its tenant for good (`inbound_addresses` rows are never changed or
  // deleted): known ones are kept (bounded), so a RCPT of a busy address costs no query. A slug not
  // issued yet is asked every time (it may be issued any moment by `GET /inbound/domain`).
  const known = new Map<string, string>();
  return async function tenantsOf(address: string): Promise<string[]> {
    const at = address.lastIndexOf('@');
    if (at <= 0) return [];
    const host = address
      .slice(at + 1)
      .toLowerCase()
      .replace(/\.$/, '');
    if (suffix && host.endsWith(suffix)) {
      const slug = host.slice(0, -suffix.length);
      if (slug === '' || slug.includes('.')) return [];
      const cached = known.get(slug);
      if (cached !== undefined) return [cached];
      const tenant = await tenantOfSlug(opts.pool, slug);
      if (tenant === null) return [];
      if (known.size >= 10_000) known.clear();
      known.set(slug, tenant);
      return [tenant];
    }
    return opts.receivingTenants(host);
  };
}
