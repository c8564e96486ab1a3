// VERP envelope senders (SPEC §21): the address names the email; only Tern's HMAC makes it genuine.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseVerpLocalPart, verpAddress, verpMac, verpMatches } from '../src/index.js';

const SECRET = 'verp-test-secret-0123456789abcdef';

describe('VERP addresses', () => {
  it('b+<emailId>.<16 hex>@<bounce host>, parsed back to the id and MAC, which verify for the tenant', () => {
    const address = verpAddress(SECRET, 'tenant-a', 'em_AbC123', 'tern-bounces.acme.test');
    expect(address).toMatch(/^b\+em_AbC123\.[0-9a-f]{16}@tern-bounces\.acme\.test$/);
    const claim = parseVerpLocalPart(address.split('@')[0]!);
    expect(claim).toEqual({
      emailId: 'em_AbC123',
      recipientIndex: null,
      mac: verpMac(SECRET, 'tenant-a', 'em_AbC123'),
    });
    expect(verpMatches(SECRET, 'tenant-a', claim!.emailId, claim!.mac)).toBe(true);
  });

  it('per recipient (issue 40, item 2): b+<emailId>=<n>.<mac> names the n-th recipient; its MAC is not the whole-email one', () => {
    const address = verpAddress(SECRET, 'tenant-a', 'em_AbC123', 'b.test', 2);
    expect(address).toMatch(/^b\+em_AbC123=2\.[0-9a-f]{16}@b\.test$/);
    const claim = parseVerpLocalPart(address.split('@')[0]!)!;
    expect(claim).toMatchObject({ emailId: 'em_AbC123', recipientIndex: 2 });
    expect(verpMatches(SECRET, 'tenant-a', claim.emailId, claim.mac, 2)).toBe(true);
    // Another index, or the whole-email form with this MAC, does not verify.
    expect(verpMatches(SECRET, 'tenant-a', claim.emailId, claim.mac, 1)).toBe(false);
    expect(verpMatches(SECRET, 'tenant-a', claim.emailId, claim.mac, null)).toBe(false);
    const whole = verpMac(SECRET, 'tenant-a', 'em_AbC123');
    expect(verpMatches(SECRET, 'tenant-a', 'em_AbC123', whole, 0)).toBe(false);
    // An id with dots and digits stays the whole-email form.
    expect(parseVerpLocalPart(`b+em_AbC123.2.${whole}`)).toEqual({
      emailId: 'em_AbC123.2',
      recipientIndex: null,
      mac: whole,
    });
  });

  it('another tenant, another email, another secret or an altered MAC does not verify', () => {
    const mac = verpMac(SECRET, 'tenant-a', 'em_1');
    expect(verpMatches(SECRET, 'tenant-b', 'em_1', mac)).toBe(false);
    expect(verpMatches(SECRET, 'tenant-a', 'em_2', mac)).toBe(false);
    expect(verpMatches('another-secret', 'tenant-a', 'em_1', mac)).toBe(false);
    const altered = `${mac.slice(0, -1)}${mac.endsWith('0') ? '1' : '0'}`;
    expect(verpMatches(SECRET, 'tenant-a', 'em_1', altered)).toBe(false);
    expect(verpMatches(SECRET, 'tenant-a', 'em_1', mac.slice(1))).toBe(false);
  });

  it('a local part whose case an MTA folded still verifies (the MAC is compared in lower case)', () => {
    const local = verpAddress(SECRET, 't', 'em_x', 'b.test').split('@')[0]!.toUpperCase();
    const claim = parseVerpLocalPart(local)!;
    expect(verpMatches(SECRET, 't', 'em_x', claim.mac)).toBe(true);
  });

  it('what is not a VERP local part is null', () => {
    for (const local of [
      'bounces',
      'b+',
      'b+em_1',
      'b+em_1.xyz',
      'b+.0123456789abcdef',
      'x+em_1.0123456789abcdef',
      '',
    ]) {
      expect(parseVerpLocalPart(local), local).toBeNull();
    }
  });

  it('any email id Tern writes round-trips (ids with dots included: the MAC is after the last one)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,60}$/), fc.string(), (id, tenant) => {
        const local = verpAddress(SECRET, tenant, id, 'b.test').split('@')[0]!;
        const claim = parseVerpLocalPart(local);
        return claim !== null && claim.emailId === id && verpMatches(SECRET, tenant, id, claim.mac);
      }),
    );
  });
});
