// The sender's DKIM signature made in the thread pool (issue 45, item 1): byte for byte what
// nodemailer's own signer writes for the same message and key, and verified by mailauth.
import { generateKeyPairSync } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { dkimVerify } from 'mailauth';
import DKIM from 'nodemailer/lib/dkim';
import MailComposer from 'nodemailer/lib/mail-composer';
import { describe, expect, it } from 'vitest';
import { signDkim } from '../src/providers/dkim-sign.js';
import { DKIM_SIGNED_HEADERS } from '../src/providers/smtp.js';

const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkimTxt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;

const compose = (mail: ConstructorParameters<typeof MailComposer>[0]) =>
  new MailComposer(mail).compile().build();

const options = (domainName: string) => ({
  domainName,
  keySelector: 'tern1',
  privateKey,
  headerFieldNames: DKIM_SIGNED_HEADERS,
});

/** What nodemailer's signer writes (the one `sendMail({ dkim })` uses). */
const nodemailerSigned = (raw: Buffer, domainName: string) =>
  buffer(new DKIM({ ...options(domainName), privateKey: privateKey as unknown as string }).sign(raw));

const cases: [string, () => Promise<Buffer>, string][] = [
  [
    'a one-recipient email, HTML and text',
    () =>
      compose({
        from: 'Acme <hello@signer.test>',
        to: 'ada@example.com',
        subject: 'Hello',
        html: '<p>Hi</p>',
        text: 'Hi',
        messageId: '<em_1@signer.test>',
        headers: { 'X-Tern-Email-Id': 'em_1' },
      }),
    'signer.test',
  ],
  [
    'a long non-ASCII subject (folded, encoded), cc, list-unsubscribe, an attachment',
    () =>
      compose({
        from: 'Acme <hello@signer.test>',
        to: 'ada@example.com, bo@example.com',
        cc: 'cy@example.com',
        subject: `Héllo ${'wörld '.repeat(30)}`,
        text: 'Line with trailing spaces   \r\n\r\n\r\nand  runs\tof white space\r\n\r\n\r\n',
        messageId: '<em_2@signer.test>',
        headers: {
          'List-Unsubscribe': '<https://t.example/u/em_2>',
          'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
        },
        attachments: [{ filename: 'data.bin', content: Buffer.alloc(5000, 7) }],
      }),
    'signer.test',
  ],
  [
    'an empty body',
    () => compose({ from: 'hello@signer.test', to: 'ada@example.com', subject: 'Empty', text: '' }),
    'signer.test',
  ],
  [
    'LF line ends and a header folded by hand',
    async () =>
      Buffer.from(
        'From: hello@signer.test\nTo: ada@example.com\nSubject: a subject\n  folded by hand\nDate: Fri, 4 Dec 2026 23:00:00 +0000\n\nbody  \n\n',
      ),
    'signer.test',
  ],
  [
    'an internationalised signing domain',
    () => compose({ from: 'hello@bücher.test', to: 'ada@example.com', subject: 'IDN', text: 'x' }),
    'bücher.test',
  ],
];

describe('signDkim', () => {
  it.each(cases)(
    '%s: the bytes of nodemailer’s signer, verified by mailauth',
    async (_name, make, domain) => {
      const raw = await make();
      const ours = await signDkim(raw, options(domain));
      const theirs = await nodemailerSigned(raw, domain);
      expect(ours.toString('latin1')).toBe(theirs.toString('latin1'));
      expect(ours.subarray(0, 16).toString()).toBe('DKIM-Signature: ');
      const verdict = await dkimVerify(ours, {
        resolver: (async (name: string) => {
          if (name === `tern1._domainkey.${new URL(`http://${domain}`).hostname}`) return [[dkimTxt]];
          throw Object.assign(new Error(`no record for ${name}`), { code: 'ENOTFOUND' });
        }) as never,
      });
      expect(verdict.results.map((r) => r.status.result)).toEqual(['pass']);
    },
  );

  it('an altered copy does not pass', async () => {
    const raw = await cases[0]![1]();
    const signed = (await signDkim(raw, options('signer.test')))
      .toString('latin1')
      .replace('<p>Hi</p>', '<p>Ho</p>');
    const verdict = await dkimVerify(Buffer.from(signed, 'latin1'), {
      resolver: (async () => [[dkimTxt]]) as never,
    });
    expect(verdict.results.map((r) => r.status.result)).not.toContain('pass');
  });

  it('a message with no header block goes out as it came, unsigned (as nodemailer’s signer does)', async () => {
    const raw = Buffer.from('no headers here');
    const ours = await signDkim(raw, options('signer.test'));
    expect(ours.toString('latin1')).toBe((await nodemailerSigned(raw, 'signer.test')).toString('latin1'));
  });
});
