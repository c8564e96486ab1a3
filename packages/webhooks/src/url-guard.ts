import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may go (SPEC §17). Without `allowPrivate`, a URL must be `https://` and every
 * address its host resolves to must be public. The same rule runs again inside the socket's DNS
 * lookup at delivery time, so a name that later resolves to an internal address (DNS rebinding)
 * is refused on the connection that would use it.
 *
 * "Public" is ipaddr.js's range classification: only plain `unicast` passes, so loopback, private
 * (RFC 1918, ULA), link-local (cloud metadata), CGNAT, unspecified, broadcast, multicast,
 * documentation, benchmarking, reserved, NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4, Teredo,
 * ORCHID… are refused; IPv4-mapped IPv6 is judged as its IPv4. One range it does not name is
 * refused here: IPv4-compatible IPv6 (`::/96`, deprecated, e.g. `[::127.0.0.1]`), checked with
 * Node's own parser because ipaddr.js reads `::a.b.c.d` as IPv4-mapped.
 */

const ipv4Compatible = new BlockList();
ipv4Compatible.addSubnet('::', 96, 'ipv6');

/** True for an address a webhook must not reach; text that is not an IP address is refused too. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  // isIP first: ipaddr.js also accepts non-standard forms such as `0x7f.1`.
  if (family === 0 || !ipaddr.isValid(address)) return true;
  if (family === 6 && ipv4Compatible.check(address, 'ipv6')) return true;
  let parsed = ipaddr.parse(address);
  if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) parsed = parsed.toIPv4Address();
  return parsed.range() !== 'unicast';
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
