import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientKeyOf, perMinute } from '../src/index.js';

describe('clientKeyOf', () => {
  it('keeps an IPv4 address, and maps its IPv4-mapped IPv6 form onto it', () => {
    expect(clientKeyOf('192.0.2.7')).toBe('192.0.2.7');
    expect(clientKeyOf('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKeyOf('::FFFF:127.0.0.1')).toBe('127.0.0.1');
  });

  it('counts an IPv6 client by its /64, whichever way the address is written', () => {
    expect(clientKeyOf('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64');
    expect(clientKeyOf('2001:0db8:0001:0002:0000:0000:0000:0009')).toBe('2001:db8:1:2::/64');
    expect(clientKeyOf('2001:db8:1:3::5')).not.toBe(clientKeyOf('2001:db8:1:2::5'));
    expect(clientKeyOf('::1')).toBe('0:0:0:0::/64');
    expect(clientKeyOf('fe80::1')).toBe('fe80:0:0:0::/64');
  });

  it('gives every address of one /64 the same key (property)', () => {
    const hextet = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
    fc.assert(
      fc.property(
        fc.array(hextet, { minLength: 8, maxLength: 8 }),
        fc.array(hextet, { minLength: 4, maxLength: 4 }),
        (a, tail) => {
          const other = [...a.slice(0, 4), ...tail];
          expect(clientKeyOf(a.join(':'))).toBe(clientKeyOf(other.join(':')));
        },
      ),
    );
  });
});

describe('perMinute', () => {
  it('allows `limit` per client per minute, then refuses until the next minute', () => {
    let t = 60_000 * 1000;
    const rate = perMinute(3, () => t);
    expect([1, 2, 3, 4].map(() => rate.take('a'))).toEqual([true, true, true, false]);
    expect(rate.exceeded('a')).toBe(true);
    expect(rate.take('b')).toBe(true);
    t += 60_000;
    expect(rate.exceeded('a')).toBe(false);
    expect(rate.take('a')).toBe(true);
  });

  it('keeps at most `maxClients` clients a minute: a new one past that counts as over', () => {
    const rate = perMinute(10, () => 0, 2);
    expect(rate.take('a')).toBe(true);
    expect(rate.take('b')).toBe(true);
    expect(rate.take('c')).toBe(false);
    expect(rate.take('a')).toBe(true);
  });
});
