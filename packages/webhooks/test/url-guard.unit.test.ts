import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, ForbiddenAddressError, guardedLookup, isForbiddenAddress } from '../src/index.js';
import type { LookupAll } from '../src/url-guard.js';

const resolveTo = (addresses: string[]) => async () => addresses;

describe('webhook URL guard', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '224.0.0.1',
    // IPv4-compatible IPv6 (::/96) and NAT64, well-known and local-use (issue 24 #10)
    '::127.0.0.1',
    '::7f00:1',
    '::a00:1',
    '::8.8.8.8',
    '64:ff9b::7f00:1',
    '64:ff9b::8.8.8.8',
    '64:ff9b:1::a00:1',
    '64:ff9b:1:ffff::1',
    // other special ranges: 6to4, Teredo, SIIT, site-local, discard, documentation, ORCHID
    '2002:7f00:1::1',
    '2001:0:4136:e378::1',
    '::ffff:0:7f00:1',
    'fec0::1',
    '100::1',
    '2001:db8::1',
    '2001:20::1',
    // the other IPv4 special ranges
    '10.255.255.255',
    '100.127.255.255',
    '169.254.0.1',
    '192.0.0.1',
    '192.0.2.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.1',
    '203.0.113.1',
    '239.255.255.255',
    '240.0.0.1',
    '255.255.255.255',
    '0.1.2.3',
    '::ffff:169.254.169.254',
    '::ffff:192.168.0.1',
    // not an IP at all: refused, never treated as allowed
    '',
    'localhost',
    'example.com',
    '127.1',
    '0x7f.0.0.1',
    '1.2.3.4.5',
    '::g',
  ])('%s is forbidden', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '172.15.255.255',
    '11.0.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.254',
    '2606:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9c::1',
    '2001:4860:4860::8888',
  ])('%s is allowed', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });

  const strict = (addresses: string[]) => ({ allowPrivate: false, resolve: resolveTo(addresses) });

  it('accepts an https URL resolving to public addresses only', async () => {
    expect(await checkWebhookUrl('https://hooks.example.com/x', strict(['93.184.216.34']))).toBeNull();
  });

  it('refuses http:// unless private targets are allowed', async () => {
    expect(await checkWebhookUrl('http://hooks.example.com/x', strict(['93.184.216.34']))).toMatch(
      /https:\/\//,
    );
    expect(await checkWebhookUrl('http://127.0.0.1:9/x', { allowPrivate: true })).toBeNull();
  });

  it('refuses a name resolving to any private address (one bad record is enough)', async () => {
    expect(
      await checkWebhookUrl('https://internal.example.com/', strict(['93.184.216.34', '10.0.0.5'])),
    ).toMatch(/private/);
  });

  it('refuses IP literals in forbidden ranges, bracketed IPv6 included', async () => {
    expect(await checkWebhookUrl('https://127.0.0.1/', strict([]))).toMatch(/loopback/);
    expect(await checkWebhookUrl('https://[::1]/', strict([]))).toMatch(/loopback/);
    expect(await checkWebhookUrl('https://169.254.169.254/latest', strict([]))).toMatch(/link-local/);
  });

  it('refuses a name that does not resolve, garbage, other schemes and credentials', async () => {
    const failing = {
      allowPrivate: false,
      resolve: async () => {
        throw new Error('ENOTFOUND');
      },
    };
    expect(await checkWebhookUrl('https://nowhere.invalid/', failing)).toMatch(/does not resolve/);
    expect(await checkWebhookUrl('not a url', strict([]))).toMatch(/absolute URL/);
    expect(await checkWebhookUrl('ftp://example.com/', strict(['93.184.216.34']))).toMatch(/https/);
    expect(await checkWebhookUrl('https://u:p@example.com/', strict(['93.184.216.34']))).toMatch(
      /credentials/,
    );
  });

  it('refuses the IPv4-compatible and NAT64 literals of issue 24 #10', async () => {
    for (const url of ['https://[::127.0.0.1]/', 'https://[::7f00:1]/', 'https://[64:ff9b:1::a00:1]/']) {
      expect(await checkWebhookUrl(url, strict([])), url).toMatch(/private/);
    }
  });

  it('a name that resolves to no address, or to text that is no IP, is refused', async () => {
    expect(await checkWebhookUrl('https://empty.example.com/', strict([]))).toMatch(/does not resolve/);
    expect(await checkWebhookUrl('https://odd.example.com/', strict(['not-an-ip']))).toMatch(/private/);
    expect(await checkWebhookUrl('https://odd.example.com/', strict(['93.184.216.34', '']))).toMatch(
      /private/,
    );
  });

  it('refuses any credential part: a user without password, a password without user', async () => {
    for (const url of ['https://u@example.com/', 'https://:p@example.com/', 'https://u:@example.com/']) {
      expect(await checkWebhookUrl(url, strict(['93.184.216.34'])), url).toMatch(/credentials/);
      expect(await checkWebhookUrl(url, { allowPrivate: true }), url).toMatch(/credentials/);
    }
  });

  it('with private targets allowed: http and https only, any address, no resolution', async () => {
    const lenient = {
      allowPrivate: true,
      resolve: async () => {
        throw new Error('must not resolve');
      },
    };
    for (const url of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'ws://example.com/',
      'javascript:alert(1)',
    ]) {
      expect(await checkWebhookUrl(url, lenient), url).toBe('url must start with https:// or http://');
    }
    expect(await checkWebhookUrl('ftp://example.com/', strict(['93.184.216.34']))).toBe(
      'url must start with https://',
    );
    expect(await checkWebhookUrl('http://10.0.0.1/', lenient)).toBeNull();
    expect(await checkWebhookUrl('https://internal.example/', lenient)).toBeNull();
  });

  it('resolves localhost for real and refuses it', async () => {
    expect(await checkWebhookUrl('https://localhost/', { allowPrivate: false })).toMatch(/loopback/);
  });
});

// guardedLookup is the connect-time defence against DNS rebinding: the addresses the socket will
// use are the ones checked. A resolver the test controls plays the attacker's DNS.
describe('guardedLookup', () => {
  type Call = { hostname: string; options: object };
  const resolver = (
    answers: Record<string, { address: string; family: number }[] | Error>,
    calls: Call[] = [],
  ) =>
    ((hostname, options, callback) => {
      calls.push({ hostname, options });
      const answer = answers[hostname];
      if (answer instanceof Error) callback(answer as NodeJS.ErrnoException, []);
      else callback(null, answer ?? []);
    }) as LookupAll;
  const v4 = (address: string) => ({ address, family: 4 });
  const v6 = (address: string) => ({ address, family: 6 });

  const lookup = (fn: ReturnType<typeof guardedLookup>, hostname: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family: unknown }>((resolve) => {
      fn(hostname, { all, family: 0 }, (error, address, family) => resolve({ error, address, family }));
    });

  it('gives the first public address, or all of them, asking the resolver for every address', async () => {
    const calls: Call[] = [];
    const fn = guardedLookup(
      false,
      resolver({ 'hooks.example': [v6('2606:4700::1111'), v4('93.184.216.34')] }, calls),
    );
    expect(await lookup(fn, 'hooks.example', false)).toEqual({
      error: null,
      address: '2606:4700::1111',
      family: 6,
    });
    expect((await lookup(fn, 'hooks.example', true)).address).toEqual([
      v6('2606:4700::1111'),
      v4('93.184.216.34'),
    ]);
    expect(calls[0]).toEqual({ hostname: 'hooks.example', options: { all: true, family: 0 } });
  });

  it('drops forbidden addresses and connects only to the public ones', async () => {
    const fn = guardedLookup(false, resolver({ mixed: [v4('127.0.0.1'), v6('::127.0.0.1'), v4('8.8.8.8')] }));
    expect(await lookup(fn, 'mixed', false)).toEqual({ error: null, address: '8.8.8.8', family: 4 });
    expect((await lookup(fn, 'mixed', true)).address).toEqual([v4('8.8.8.8')]);
  });

  it.each([
    ['only forbidden addresses', [v4('169.254.169.254'), v6('64:ff9b:1::a00:1')]],
    ['no address at all', []],
  ])('%s → ForbiddenAddressError (EWEBHOOKFORBIDDEN)', async (_what, answer) => {
    for (const all of [false, true]) {
      const { error, address } = await lookup(
        guardedLookup(false, resolver({ rebind: answer })),
        'rebind',
        all,
      );
      expect(error).toBeInstanceOf(ForbiddenAddressError);
      expect(error).toMatchObject({ code: 'EWEBHOOKFORBIDDEN', name: 'ForbiddenAddressError' });
      expect(error?.message).not.toMatch(/\d+\.\d+/);
      expect(address).toBe('');
    }
  });

  it('passes a resolver error on', async () => {
    const failure = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere'), { code: 'ENOTFOUND' });
    const { error } = await lookup(guardedLookup(false, resolver({ nowhere: failure })), 'nowhere', false);
    expect(error).toBe(failure);
  });

  it('with private targets allowed, private addresses are given as resolved', async () => {
    const fn = guardedLookup(true, resolver({ internal: [v4('10.0.0.5'), v6('::1')] }));
    expect(await lookup(fn, 'internal', false)).toEqual({ error: null, address: '10.0.0.5', family: 4 });
    expect((await lookup(fn, 'internal', true)).address).toEqual([v4('10.0.0.5'), v6('::1')]);
    const { error } = await lookup(guardedLookup(true, resolver({})), 'nothing', false);
    expect(error).toBeInstanceOf(ForbiddenAddressError);
  });

  it('a real request to a name rebound to loopback never connects; allowed, the same request arrives', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const rebound = resolver({ 'hooks.attacker.test': [v4('127.0.0.1')] });
    const post = (allowPrivate: boolean) =>
      new Promise<{ status?: number; error?: NodeJS.ErrnoException }>((resolve) => {
        const req = request(
          { host: 'hooks.attacker.test', port, method: 'POST', lookup: guardedLookup(allowPrivate, rebound) },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) => resolve({ error }));
        req.end('{}');
      });
    try {
      const refused = await post(false);
      expect(refused.error?.code).toBe('EWEBHOOKFORBIDDEN');
      expect(hits).toBe(0);
      expect(await post(true)).toEqual({ status: 200 });
      expect(hits).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
