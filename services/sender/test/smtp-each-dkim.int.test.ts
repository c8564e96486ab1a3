// DKIM of the copies of a several-recipient email (issue 40 item 2, issue 45 item 1): one envelope
// per recipient, each with its VERP sender, and each copy's signature verified by mailauth against
// the public key published on a real DNS server (the tests' dns2 server on loopback). The relay is
// a real SMTP server (smtp-server); the provider sends with nodemailer.
import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import { type SmtpSink, startSmtpSink } from '../../../test/support/smtp-sink.js';
import { createSmtpProvider } from '../src/index.js';

const DOMAIN = 'signer.test';
const SELECTOR = 'tern1';
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

let dns: TestDnsServer;
let sink: SmtpSink;

beforeAll(async () => {
  dns = await startTestDnsServer();
  const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  dns.txt(`${SELECTOR}._domainkey.${DOMAIN}`, `v=DKIM1; k=rsa; p=${p}`);
  sink = await startSmtpSink({ hideDSN: false });
});

afterAll(async () => {
  await sink?.close();
  await dns?.close();
});

const message = (id: string, to: string, cc: string[], bcc: string[]) => ({
  messageId: `<${id}@${DOMAIN}>`,
  from: `Acme <hello@${DOMAIN}>`,
  to,
  cc,
  bcc,
  replyTo: null,
  subject: 'Héllo, signed',
  html: '<p>Hi</p>',
  text: 'Hi',
  headers: { 'X-Tern-Email-Id': id },
});

async function sendSigned(id: string, to: string, cc: string[], bcc: string[]) {
  const provider = createSmtpProvider({
    url: sink.url,
    timeoutMs: 5000,
    pool: { maxConnections: 2, maxMessages: 50 },
  });
  try {
    const result = await provider.send(message(id, to, cc, bcc) as never, {
      tenantId: 'dkim-tenant',
      emailId: id,
      signing: { dkim: { domain: DOMAIN, selector: SELECTOR, privateKey } },
      envelopeFrom: `b+${id}@bounces.${DOMAIN}`,
      envelopeFromFor: (r) => `b+${id}+${r.split('@')[0]}@bounces.${DOMAIN}`,
    });
    expect(result.kind).toBe('sent');
  } finally {
    await provider.close?.();
  }
  return sink.received.filter((m) => m.raw.toLowerCase().includes(`x-tern-email-id: ${id}`));
}

async function verdicts(raw: string) {
  const result = await dkimVerify(Buffer.from(raw), { resolver: dns.resolve as never });
  return result.results.map((r) => ({ domain: r.signingDomain, result: r.status.result }));
}

describe('DKIM of one envelope per recipient', () => {
  it('to + cc + bcc: three copies, byte for byte the same, each signed once by the domain and verified (pass)', async () => {
    const copies = await sendSigned(
      'em_dkim_many',
      'ada@example.com',
      ['cy@example.com'],
      ['bo@example.com'],
    );
    expect(copies.map((c) => c.rcptTo).sort()).toEqual([
      ['ada@example.com'],
      ['bo@example.com'],
      ['cy@example.com'],
    ]);
    expect(new Set(copies.map((c) => c.mailFrom)).size).toBe(3);
    expect(new Set(copies.map((c) => c.raw)).size).toBe(1);
    const raw = copies[0]!.raw;
    expect(raw.match(/^DKIM-Signature:/gim)).toHaveLength(1);
    expect(raw).not.toMatch(/^Bcc:/im);
    for (const c of copies) expect(await verdicts(c.raw)).toEqual([{ domain: DOMAIN, result: 'pass' }]);
    // The signature covers the body: a changed copy does not pass (mailauth: the body hash did
    // not verify, `neutral`).
    const altered = raw.replace('<p>Hi</p>', '<p>Hi!</p>');
    expect(altered).not.toBe(raw);
    expect(await verdicts(altered)).toEqual([{ domain: DOMAIN, result: 'neutral' }]);
  });

  it('one recipient: one copy, signed once and verified (pass)', async () => {
    const copies = await sendSigned('em_dkim_one', 'solo@example.com', [], []);
    expect(copies).toHaveLength(1);
    expect(copies[0]!.raw.match(/^DKIM-Signature:/gim)).toHaveLength(1);
    expect(await verdicts(copies[0]!.raw)).toEqual([{ domain: DOMAIN, result: 'pass' }]);
  });
});
