// Issue 24, item 9: `from: "a@evil.test, <hello@acme.test>"` was accepted as name + address, and
// nodemailer sent `MAIL FROM:a@evil.test` with two From mailboxes; a custom `x-tern-email-id`
// header gave the message two such headers, the spoofed one first. `from` is parsed by one RFC
// 5322 parser everywhere, and reserved headers are refused in any case. Real SMTP server.
import { parseMailbox, type RenderedMessage, sendEmailBodySchema } from '@tern/contracts';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmtpSink, startSmtpSink } from '../../../test/support/smtp-sink.js';
import { createSmtpProvider } from '../src/index.js';

let smtp: SmtpSink;

beforeAll(async () => {
  smtp = await startSmtpSink();
});
afterAll(async () => {
  await smtp?.close();
});

const SEND = { to: 'ada@example.com', subject: 'Hi', text: 'Hello' };
const message = (from: string): RenderedMessage => ({
  messageId: '<em_from@tern.test>',
  from,
  to: 'ada@example.com',
  cc: [],
  bcc: [],
  replyTo: null,
  subject: 'Hi',
  html: null,
  text: 'Hello',
  headers: { 'X-Tern-Email-Id': 'em_from' },
});

describe('from: one RFC 5322 mailbox', () => {
  it('refuses a list, a second address or an address as the display name', () => {
    for (const from of [
      'a@evil.test, <hello@acme.test>',
      'a@evil.test <hello@acme.test>',
      'Acme <a@evil.test> <hello@acme.test>',
      'hello@acme.test, a@evil.test',
      'team: hello@acme.test;',
    ]) {
      expect(parseMailbox(from), from).toBeNull();
      const parsed = sendEmailBodySchema.safeParse({ ...SEND, from });
      expect(parsed.success, from).toBe(false);
      expect(JSON.stringify(parsed.error?.issues)).toContain('from');
    }
  });

  it('reads the forms it accepts, a quoted name with a comma included', () => {
    expect(parseMailbox('hello@acme.test')).toEqual({ name: null, address: 'hello@acme.test' });
    expect(parseMailbox('Acme <hello@acme.test>')).toEqual({ name: 'Acme', address: 'hello@acme.test' });
    expect(parseMailbox('"Acme, Inc." <hello@acme.test>')).toEqual({
      name: 'Acme, Inc.',
      address: 'hello@acme.test',
    });
    expect(parseMailbox('Ådå Lovelace <ada@acme.test>')).toEqual({
      name: 'Ådå Lovelace',
      address: 'ada@acme.test',
    });
  });

  it('the SMTP provider sends MAIL FROM and one From of the parsed mailbox', async () => {
    const provider = createSmtpProvider({ url: smtp.url });
    const result = await provider.send(message('"Acme, Inc." <hello@acme.test>'), {
      tenantId: 't',
      emailId: 'em_from',
    });
    expect(result.kind).toBe('sent');
    const got = smtp.received.at(-1)!;
    expect(got.mailFrom).toBe('hello@acme.test');
    const parsed = await simpleParser(got.raw);
    expect(parsed.from?.value).toEqual([{ name: 'Acme, Inc.', address: 'hello@acme.test' }]);
    await provider.close?.();
  });

  it('the SMTP provider never sends a from that is not one mailbox (a row stored before the fix)', async () => {
    const provider = createSmtpProvider({ url: smtp.url });
    const before = smtp.received.length;
    const result = await provider.send(message('a@evil.test, <hello@acme.test>'), {
      tenantId: 't',
      emailId: 'em_from',
    });
    expect(result).toEqual({ kind: 'failed', reason: 'from is not a single mailbox' });
    expect(smtp.received.length).toBe(before);
    await provider.close?.();
  });
});

describe('reserved headers, in any case', () => {
  it('refuses X-Tern-Email-Id and the other reserved names whatever their case', () => {
    for (const name of [
      'x-tern-email-id',
      'X-TERN-EMAIL-ID',
      'X-Tern-Anything',
      'FROM',
      'bcc',
      'Message-Id',
    ]) {
      const parsed = sendEmailBodySchema.safeParse({
        ...SEND,
        from: 'hello@acme.test',
        headers: { [name]: 'x' },
      });
      expect(parsed.success, name).toBe(false);
    }
    expect(
      sendEmailBodySchema.safeParse({ ...SEND, from: 'hello@acme.test', headers: { 'X-Campaign': 'c-1' } })
        .success,
    ).toBe(true);
  });
});
