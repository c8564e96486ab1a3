// parseMailbox (issue 29): a bare address skips the RFC 5322 parser and repeated values are
// answered from memory; both must answer exactly what the parser answers (issue 24, item 9).
import emailAddresses from 'email-addresses';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseMailbox } from '../src/emails.js';

const isAddress = (s: string) => z.email().max(320).safeParse(s).success;

/** The parser alone, as parseMailbox read every value before issue 29. */
function parsed(value: string) {
  if (/[\r\n]/.test(value)) return null;
  const p = emailAddresses.parseOneAddress({ input: value.trim(), rfc6532: true });
  if (p === null || p.type !== 'mailbox' || !isAddress(p.address)) return null;
  const name = p.name?.trim() ?? '';
  return { name: name === '' ? null : name, address: p.address };
}

const structure = fc.constantFrom(...'abcXYZ09._+-\'!#$%&*/=?^`{|}~@"<>(),;:\\[] é\n'.split(''));

describe('parseMailbox', () => {
  it('answers what the RFC 5322 parser answers, bare addresses, names, lists and noise alike, asked once or twice', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.emailAddress(),
          fc.string({ unit: structure, maxLength: 30 }),
          fc.emailAddress().map((e) => `Name <${e}>`),
          fc.tuple(fc.emailAddress(), fc.emailAddress()).map(([a, b]) => `${a},<${b}>`),
        ),
        (value) => {
          expect(parseMailbox(value)).toEqual(parsed(value));
          expect(parseMailbox(value)).toEqual(parsed(value));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('refuses a list whose parts are bare addresses, and a name that is an address', () => {
    expect(parseMailbox('a@evil.test,hello@acme.test')).toBeNull();
    expect(parseMailbox('a@evil.test <hello@acme.test>')).toBeNull();
    expect(parseMailbox('hello@acme.test')).toEqual({ name: null, address: 'hello@acme.test' });
  });
});
