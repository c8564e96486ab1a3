import { isIP } from 'node:net';
import type { DomainRecord, DomainRecordPurpose } from '@tern/contracts';

/** A record Tern asks for, before its status is known. */
export type ExpectedRecord = Omit<DomainRecord, 'status'>;

/** Where the return path points (SPEC §20); fixed per domain when it is added. */
export interface RecordSettings {
  /** BOUNCE_SUBDOMAIN: the label under the domain that carries the envelope sender. Default `tern-bounces`. */
  bounceSubdomain: string;
  /** BOUNCE_MX_HOST: where bounces to the bounce subdomain go (Tern's inbound listener, §21). */
  bounceMxHost: string;
  /** The SPF TXT of the bounce subdomain: see {@link spfRecord}. */
  spf: string;
}

/** What Tern suggests for `_dmarc.<domain>`: report-free monitoring, which never blocks mail. */
const DMARC_SUGGESTION = 'v=DMARC1; p=none;';

/**
 * The SPF value of the bounce subdomain: `include:` of SPF_INCLUDE when set (a relay's published
 * SPF, e.g. `amazonses.com`); else the relay of SMTP_URL itself (`ip4:`/`ip6:` for an address,
 * `a:` for a host name); else (the sandbox) the bounce MX host. `~all`: a receiver marks, never
 * rejects, mail from elsewhere, as every large provider suggests while a domain is set up.
 */
export function spfRecord(opts: {
  spfInclude?: string | undefined;
  relayHost?: string | undefined;
  fallbackHost: string;
}): string {
  if (opts.spfInclude) return `v=spf1 include:${opts.spfInclude} ~all`;
  const host = (opts.relayHost ?? opts.fallbackHost).replace(/^\[(.*)\]$/, '$1');
  const family = isIP(host);
  const mechanism = family === 4 ? `ip4:${host}` : family === 6 ? `ip6:${host}` : `a:${host}`;
  return `v=spf1 ${mechanism} ~all`;
}

/** The four records of a domain (SPEC §20), in the order Tern shows them. */
export function expectedRecords(
  name: string,
  dkim: { selector: string; publicKeyBase64: string },
  settings: RecordSettings,
): ExpectedRecord[] {
  const bounce = `${settings.bounceSubdomain}.${name}`;
  const records: Record<Exclude<DomainRecordPurpose, 'inbound_mx'>, ExpectedRecord> = {
    dkim: {
      purpose: 'dkim',
      type: 'TXT',
      name: `${dkim.selector}._domainkey.${name}`,
      value: `v=DKIM1; k=rsa; p=${dkim.publicKeyBase64}`,
    },
    return_path_mx: { purpose: 'return_path_mx', type: 'MX', name: bounce, value: settings.bounceMxHost },
    return_path_spf: { purpose: 'return_path_spf', type: 'TXT', name: bounce, value: settings.spf },
    dmarc: { purpose: 'dmarc', type: 'TXT', name: `_dmarc.${name}`, value: DMARC_SUGGESTION },
  };
  return [records.dkim, records.return_path_mx, records.return_path_spf, records.dmarc];
}

/** The bounce host of a domain's records (the envelope sender's domain): the return-path MX name. */
export function bounceHostOf(records: readonly ExpectedRecord[]): string | null {
  return records.find((r) => r.purpose === 'return_path_mx')?.name ?? null;
}

/** The MX record of a receiving domain (SPEC §24): `10 <INBOUND_MX_HOST>` at the domain itself. */
export const inboundMxRecord = (name: string, mxHost: string): ExpectedRecord => ({
  purpose: 'inbound_mx',
  type: 'MX',
  name,
  value: `10 ${mxHost}`,
});
