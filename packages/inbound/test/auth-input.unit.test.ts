// `authInput` hands mailauth only the header block of a message no header signs (DKIM, ARC): the
// verdicts must be what mailauth answers reading the whole message. Each case runs `verdictsOf`
// twice on the same bytes: once as one chunk (the header block read alone when unsigned) and once
// cut in 7-byte chunks (the block is never in the first chunk: the whole message is read). The
// DNS answers are a table (SPF, DMARC, the DKIM key); mailauth itself is real.
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import nodemailer from 'nodemailer';
import { describe, expect, it } from 'vitest';
import { authInput, type DnsResolve, verdictsOf } from '../src/auth.js';
import type { RawMessage } from '../src/parse.js';

const one = (raw: Buffer): RawMessage => ({ chunks: [raw], size: raw.length });
const cut = (raw: Buffer, n = 7): RawMessage => ({
  chunks: Array.from({ length: Math.ceil(raw.length / n) }, (_, i) => raw.subarray(i * n, i * n + n)),
  size: raw.length,
});

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
const records: Record<string, string> = {
  's1._domainkey.signer.test': `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  'signer.test': 'v=spf1 ip4:127.0.0.1 -all',
  '_dmarc.signer.test': 'v=DMARC1; p=reject',
  'plain.test': 'v=spf1 ip4:10.0.0.1 -all',
  '_dmarc.plain.test': 'v=DMARC1; p=none',
};
const resolve: DnsResolve = async (name, type) => {
  const txt = type === 'TXT' ? records[name.toLowerCase()] : undefined;
  if (txt === undefined) throw Object.assign(new Error(`no ${type} ${name}`), { code: 'ENOTFOUND' });
  return [[txt]];
};
const facts = (sender: string) => ({ clientIp: '127.0.0.1', helo: 'client.test', sender, mta: 'mx.test' });

async function build(o: { from: string; signed: boolean; text: string; subject: string }): Promise<Buffer> {
  const built = await nodemailer
    .createTransport({
      streamTransport: true,
      buffer: true,
      ...(o.signed
        ? {
            dkim: {
              domainName: 'signer.test',
              keySelector: 's1',
              privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
            },
          }
        : {}),
    })
    .sendMail({
      from: o.from,
      to: 'support@mx.test',
      subject: o.subject,
      text: o.text,
      messageId: '<m@x.test>',
    });
  return built.message as Buffer;
}

/** Both readings' verdicts; whether the one-chunk reading read the header block alone. */
async function bothWays(raw: Buffer, sender: string) {
  const headersOnly = Buffer.isBuffer(authInput(one(raw)));
  const [fast, whole] = await Promise.all([
    verdictsOf(one(raw), facts(sender), resolve),
    verdictsOf(cut(raw), facts(sender), resolve),
  ]);
  expect(Buffer.isBuffer(authInput(cut(raw))), 'cut in chunks: the whole message').toBe(false);
  expect(fast).toEqual(whole);
  return { headersOnly, verdicts: fast };
}

describe('authInput', () => {
  it('the header block of unsigned mail, up to the blank line, in CRLF or LF', () => {
    const crlf = Buffer.from('From: a@b.test\r\nSubject: x\r\n\r\nbody\r\n\r\nmore\r\n');
    expect(authInput(one(crlf))).toEqual(Buffer.from('From: a@b.test\r\nSubject: x\r\n\r\n'));
    const lf = Buffer.from('From: a@b.test\nSubject: x\n\nbody\n');
    expect(authInput(one(lf))).toEqual(Buffer.from('From: a@b.test\nSubject: x\n\n'));
    const mixed = Buffer.from('From: a@b.test\r\n\nbody\r\n');
    expect(authInput(one(mixed))).toEqual(Buffer.from('From: a@b.test\r\n\n'));
  });

  it('the whole message when a header names a signature, no blank line ends the headers, or the first chunk does not hold them', () => {
    for (const name of [
      'DKIM-Signature',
      'dkim-signature',
      'ARC-Seal',
      'arc-message-signature',
      'ARC-Authentication-Results',
    ]) {
      const raw = one(Buffer.from(`From: a@b.test\r\n${name}: v=1; d=b.test\r\n\r\nbody\r\n`));
      expect(authInput(raw), name).toBe(raw);
    }
    const headless = one(Buffer.from('From: a@b.test\r\nSubject: x\r\n'));
    expect(authInput(headless)).toBe(headless);
    const split = cut(Buffer.from('From: a@b.test\r\nSubject: x\r\n\r\nbody\r\n'));
    expect(authInput(split)).toBe(split);
  });

  it('verdicts equal to the whole message’s: a real signature passes, altered fails, unsigned mail of a p=reject domain fails DMARC', async () => {
    const signed = await build({ from: 'bob@signer.test', signed: true, text: 'Signed body', subject: 's' });
    const pass = await bothWays(signed, 'bob@signer.test');
    expect(pass).toEqual({
      headersOnly: false,
      verdicts: { spf: 'pass', dkim: 'pass', dmarc: 'pass', arc: 'none' },
    });
    const altered = Buffer.from(signed.toString().replace('Signed body', 'Altered body'));
    const fail = await bothWays(altered, 'bob@elsewhere.test');
    expect(fail.headersOnly).toBe(false);
    expect(fail.verdicts.dkim).not.toBe('pass');
    expect(fail.verdicts.dmarc).toBe('fail');
    const unsigned = await build({ from: 'bob@signer.test', signed: false, text: 'Hello', subject: 'u' });
    expect(await bothWays(unsigned, 'bob@signer.test')).toEqual({
      headersOnly: true,
      verdicts: { spf: 'pass', dkim: 'none', dmarc: 'pass', arc: 'none' },
    });
    const spoofed = await bothWays(unsigned, 'bob@elsewhere.test');
    expect(spoofed).toEqual({
      headersOnly: true,
      verdicts: { spf: 'none', dkim: 'none', dmarc: 'fail', arc: 'none' },
    });
  });

  it('property: the same verdicts read either way, for signed, altered and unsigned mail of any text, CRLF or LF', async () => {
    let headersOnly = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          from: fc.constantFrom('bob@signer.test', 'ann@plain.test', 'eve@nowhere.test'),
          sender: fc.constantFrom('bob@signer.test', 'ann@plain.test', '', 'x@elsewhere.test'),
          signed: fc.boolean(),
          alter: fc.boolean(),
          lf: fc.boolean(),
          subject: fc.string({ maxLength: 60 }),
          text: fc.string({ unit: 'grapheme', maxLength: 300 }),
        }),
        async (o) => {
          let raw = await build({ ...o, text: `${o.text}\nend` });
          if (o.alter) raw = Buffer.from(raw.toString('latin1').replace(/end\r?\n?$/, 'END\r\n'), 'latin1');
          if (o.lf) raw = Buffer.from(raw.toString('latin1').replace(/\r\n/g, '\n'), 'latin1');
          if ((await bothWays(raw, o.sender)).headersOnly) headersOnly++;
        },
      ),
      { numRuns: 150 },
    );
    // Unsigned mail (about half the runs) is read as its header block alone.
    expect(headersOnly).toBeGreaterThan(30);
  });
});
