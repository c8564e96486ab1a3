import { isIPv6 } from 'node:net';

/** The hextets of an IPv6 address written out (`::` expanded), or null when it is not one. */
function hextets(address: string): string[] | null {
  if (!isIPv6(address)) return null;
  const [head = '', tail] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // An embedded IPv4 tail (`::1.2.3.4`) counts as two hextets; only the first four matter here.
  const width = (parts: string[]) => parts.reduce((n, p) => n + (p.includes('.') ? 2 : 1), 0);
  const zeros = tail === undefined ? [] : Array(8 - width(left) - width(right)).fill('0');
  return [...left, ...zeros, ...right];
}

/**
 * The key a client's connections and rates are counted under: its IPv4 address, or the /64 of
 * its IPv6 address (one site gets a /64; counting single addresses would let it open 2^64 slots).
 * `::ffff:1.2.3.4` is the IPv4 client 1.2.3.4.
 */
export function clientKeyOf(remoteAddress: string | undefined): string {
  const address = (remoteAddress ?? '')
    .trim()
    .toLowerCase()
    .replace(/^::ffff:(?=\d+\.)/, '');
  const parts = hextets(address);
  if (parts === null) return address;
  return `${parts
    .slice(0, 4)
    .map((p) => p.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
