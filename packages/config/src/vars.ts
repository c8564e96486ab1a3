import { isIP } from 'node:net';
import { z } from 'zod';
import type { TrustProxy } from './config.js';

// The parsers of single variables: each turns the raw string into its value or a message saying what is wanted.

export const intVar = (min: number, max: number) => {
  const message = `must be an integer ${min}..${max}`;
  return z
    .string()
    .regex(/^[+-]?\d+$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: message }).max(max, { error: message }));
};

export const urlVar = (protocols: readonly string[]) => {
  const message = `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`;
  return z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { error: message },
  );
};

export const boolVar = z
  .string()
  .regex(/^(true|false|1|0)$/i, { error: 'must be true or false' })
  .transform((v) => v.toLowerCase() === 'true' || v === '1');

export const enumVar = <T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(', ')}` });

// `host:port`, host being a name, an IPv4 address or a bracketed IPv6 address.
const BROKER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

// A DNS host name: labels of letters, digits and inner hyphens, at least two.
const HOST_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
export const hostVar = (min: number) =>
  z
    .string()
    .transform((v) => v.toLowerCase().replace(/\.$/, ''))
    .refine(
      (v) => v.length <= 253 && v.split('.').length >= min && v.split('.').every((l) => HOST_LABEL.test(l)),
      {
        error:
          min > 1 ? 'must be a host name such as mx.example.com' : 'must be a DNS label such as tern-bounces',
      },
    );

// Resolver addresses as node:dns takes them: an IP, with a port (`[v6]:port` for IPv6).
const dnsServer = (entry: string): boolean => {
  const v6 = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  if (v6) return isIP(v6[1]!) === 6 && (v6[2] === undefined || Number(v6[2]) <= 65535);
  if (isIP(entry) === 6) return true;
  const [host = '', port, ...rest] = entry.split(':');
  return (
    rest.length === 0 &&
    isIP(host) === 4 &&
    (port === undefined || (/^\d{1,5}$/.test(port) && Number(port) <= 65535))
  );
};

/** The items of a comma list, trimmed, empty ones dropped (`a, b,` → `['a', 'b']`). */
const commaItems = (value: string): string[] =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);

export const dnsServersVar = z
  .string()
  .transform(commaItems)
  .refine((list) => list.length > 0 && list.every(dnsServer), {
    error: 'must be a comma list of ip:port (e.g. 127.0.0.1:5353; [::1]:53 for IPv6)',
  });

export const SNS_TOPIC_ARN = /^arn:aws(?:-[a-z]+)*:sns:[a-z0-9-]{1,32}:\d{12}:[A-Za-z0-9_.-]{1,256}$/;
// Fastify's trustProxy (proxy-addr): an address, a CIDR range or one of proxy-addr's names.
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const proxyEntry = (entry: string): boolean => {
  if (PROXY_NAMES.has(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
};
export const trustProxyVar = z
  .string()
  .transform((value): TrustProxy => {
    const v = value.trim();
    if (/^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
    if (/^\d{1,2}$/.test(v)) return Number(v);
    return commaItems(v);
  })
  .refine((v) => !Array.isArray(v) || (v.length > 0 && v.every(proxyEntry)), {
    error:
      'must be true, false, a number of hops (0..99) or a comma list of proxy addresses or CIDR ranges (e.g. 10.0.0.0/8,loopback)',
  });

export const brokersVar = z
  .string()
  .transform(commaItems)
  .refine((list) => list.length > 0 && list.every((b) => BROKER.test(b)), {
    error: 'must be a comma list of host:port',
  });
