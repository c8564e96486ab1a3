import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may go (SPEC §17). Without `allowPrivate`, a URL must be `https://` and every
 * address its host resolves to must be public: loopback, private, link-local, CGNAT, unspecified,
 * multicast, documentation and other special ranges are refused. The same rule runs again inside
 * the socket's DNS lookup at delivery time, so a name that later resolves to an internal address
 * (DNS rebinding) is refused on the connection that would use it.
 *
 * An address is allowed only when ipaddr.js classifies it as plain `unicast` (so every special
 * range it knows is refused: NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4, Teredo, ORCHID,
 * reserved, …) AND it is in none of the ranges below, AND it is not an IPv4-compatible IPv6
 * address (`::/96`, e.g. `[::127.0.0.1]`, which ipaddr.js does not name). IPv4-mapped IPv6 is
 * judged as its IPv4.
 */

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated, embeds IPv4: [::127.0.0.1])
  ['64:ff9b::', 96], // NAT64 (embeds IPv4)
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215)
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** True for an address a webhook must not reach (IPv4-mapped IPv6 judged as its IPv4); non-IP text is refused. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) {
    if (blocked.check(address, 'ipv4')) return true;
  } else if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1] ? blocked.check(mapped[1], 'ipv4') : blocked.check(address, 'ipv6')) return true;
  } else return true;
  // The explicit list first: ipaddr.js reads `::a.b.c.d` as IPv4-mapped, which ::/96 above refuses.
  try {
    let parsed = ipaddr.parse(address);
    if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) parsed = parsed.toIPv4Address();
    return parsed.range() !== 'unicast';
  } catch {
    return true;
  }
}

export type ResolveAll = (hostname: string) => Promise<string[]>;

/** Every address of a name, as the system resolver (getaddrinfo) gives them. */
export const resolveAll: ResolveAll = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses.map((a) => a.address));
    });
  });

export interface UrlPolicy {
  /** WEBHOOK_ALLOW_PRIVATE: http:// and internal addresses allowed. */
  allowPrivate: boolean;
  resolve?: ResolveAll;
}

/** Host of a URL without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Checks a webhook URL; resolves to null when it is acceptable, else to the reason (one
 * sentence, safe to show the tenant: it names no address).
 */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:')) {
    return policy.allowPrivate ? 'url must start with https:// or http://' : 'url must start with https://';
  }
  if (url.username || url.password) return 'url must not contain credentials';
  if (policy.allowPrivate) return null;
  const host = hostOf(url);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await (policy.resolve ?? resolveAll)(host);
    } catch {
      return 'url host does not resolve';
    }
  }
  if (addresses.length === 0) return 'url host does not resolve';
  if (addresses.some(isForbiddenAddress)) {
    return 'url resolves to a loopback, private or link-local address, which webhooks may not reach';
  }
  return null;
}

/** Raised by the guarded lookup; the delivery records it as the attempt's error. */
export class ForbiddenAddressError extends Error {
  override readonly name = 'ForbiddenAddressError';
  readonly code = 'EWEBHOOKFORBIDDEN';
}

/** The shape of `dns.lookup` with `all: true` that `guardedLookup` resolves through. */
export type LookupAll = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for `http.request` that refuses forbidden addresses when private targets are not
 * allowed: the check and the connection use the same resolution, so nothing can rebind between.
 * Forbidden addresses are dropped; none left (or none at all) → `ForbiddenAddressError`.
 * `resolve` is the system resolver unless a test passes its own.
 */
export function guardedLookup(allowPrivate: boolean, resolve: LookupAll = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const allowed = allowPrivate ? addresses : addresses.filter((a) => !isForbiddenAddress(a.address));
      if (allowed.length === 0) {
        return callback(new ForbiddenAddressError('the webhook host resolves to a forbidden address'), '', 0);
      }
      if (options.all) return callback(null, allowed as never, 0);
      const first = allowed[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
