// The MX listener's resolver (`dnsResolverOf`, what `npm start` gives mailauth): answers cached for
// a bounded time, through a real DNS server on loopback (the tests' dns2 server), counted at the server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import { dnsResolverOf } from '../src/auth.js';

let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startTestDnsServer();
});
afterAll(async () => {
  await dns.close();
});

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'resolved';
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('dnsResolverOf: a cache of answers', () => {
  it('asks the server once for a name asked again, and for concurrent asks; each caller gets its own copy', async () => {
    dns.txt('cache-a.sender.test', 'v=spf1 -all');
    const resolve = dnsResolverOf([dns.server]);
    const before = dns.queries;
    const answers = (await Promise.all(
      Array.from({ length: 5 }, () => resolve('cache-a.sender.test', 'TXT')),
    )) as string[][][];
    expect(dns.queries - before).toBe(1);
    const first = (await resolve('Cache-A.sender.test', 'TXT')) as string[][];
    expect(dns.queries - before).toBe(1);
    expect(first).toEqual([['v=spf1 -all']]);
    first[0]!.push('changed by a caller');
    expect(await resolve('cache-a.sender.test', 'TXT')).toEqual([['v=spf1 -all']]);
    for (const a of answers) expect(a).toEqual([['v=spf1 -all']]);
    // Another type at the same name is another question.
    expect(await codeOf(resolve('cache-a.sender.test', 'MX'))).toBe('ENODATA');
    expect(dns.queries - before).toBe(2);
  });

  it('keeps "no such name" as an answer, but asks again after a server failure', async () => {
    const resolve = dnsResolverOf([dns.server]);
    const before = dns.queries;
    expect(await codeOf(resolve('_dmarc.missing.sender.test', 'TXT'))).toBe('ENOTFOUND');
    expect(await codeOf(resolve('_dmarc.missing.sender.test', 'TXT'))).toBe('ENOTFOUND');
    expect(dns.queries - before).toBe(1);

    dns.fail();
    const failed = await codeOf(resolve('cache-b.sender.test', 'TXT'));
    dns.healthy();
    expect(failed).not.toBe('resolved');
    expect(failed).not.toBe('ENOTFOUND');
    dns.txt('cache-b.sender.test', 'v=DMARC1; p=none');
    expect(await resolve('cache-b.sender.test', 'TXT')).toEqual([['v=DMARC1; p=none']]);
  });

  it('asks again once the answer is older than its time to live', async () => {
    const resolve = dnsResolverOf([dns.server], { ttlMs: 150 });
    dns.txt('cache-c.sender.test', 'v=spf1 ip4:192.0.2.1 -all');
    expect(await resolve('cache-c.sender.test', 'TXT')).toEqual([['v=spf1 ip4:192.0.2.1 -all']]);
    dns.remove('cache-c.sender.test');
    dns.txt('cache-c.sender.test', 'v=spf1 ip4:192.0.2.2 -all');
    expect(await resolve('cache-c.sender.test', 'TXT')).toEqual([['v=spf1 ip4:192.0.2.1 -all']]);
    await new Promise((r) => setTimeout(r, 200));
    expect(await resolve('cache-c.sender.test', 'TXT')).toEqual([['v=spf1 ip4:192.0.2.2 -all']]);
  });

  it('holds at most `entries` answers, the least recently used dropped first', async () => {
    const resolve = dnsResolverOf([dns.server], { entries: 2 });
    for (const n of [1, 2, 3]) dns.txt(`cache-d${n}.sender.test`, `v=spf1 -all ${n}`);
    const before = dns.queries;
    await resolve('cache-d1.sender.test', 'TXT');
    await resolve('cache-d2.sender.test', 'TXT');
    await resolve('cache-d3.sender.test', 'TXT');
    await resolve('cache-d3.sender.test', 'TXT');
    expect(dns.queries - before).toBe(3);
    await resolve('cache-d1.sender.test', 'TXT');
    expect(dns.queries - before).toBe(4);
  });
});
