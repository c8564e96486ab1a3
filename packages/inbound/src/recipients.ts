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
      const tenant = await tenantOfSlug(opts.pool, slug);
      return tenant ? [tenant] : [];
    }
    return opts.receivingTenants(host);
  };
}
