// What a `forward` route action sends (SPEC §24): built from a real parsed message (mailparser).
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { FORWARDED_HEADER, forwardEmailId, forwardRequest, isForward } from '../src/forward.js';

const raw = (extra: string[] = []) =>
  Buffer.from(
    [
      'From: "Ann Example" <ann@sender.test>',
      'To: support@acme.in.tern.test, someone@victim.test',
      'Subject: Help',
      'Message-ID: <m1@sender.test>',
      ...extra,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Please help.',
      '--b',
      'Content-Type: application/pdf; name="a/b.pdf"',
      'Content-Disposition: attachment; filename="a/b.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('%PDF-1.4 test').toString('base64'),
      '--b--',
      '',
    ].join('\r\n'),
  );

describe('forward', () => {
  it('an email id derived from the inbound id and the action: the same on every retry, distinct per action', () => {
    const a = forwardEmailId('inb_1', 0);
    expect(a).toMatch(/^em_[0-9A-Za-z]{24}$/);
    expect(forwardEmailId('inb_1', 0)).toBe(a);
    expect(forwardEmailId('inb_1', 1)).not.toBe(a);
    expect(forwardEmailId('inb_2', 0)).not.toBe(a);
  });

  it('goes to the route’s address only, Reply-To the sender, with the original’s subject, text and attachments', async () => {
    const parsed = await simpleParser(raw());
    const at = new Date('2026-06-15T12:00:00Z');
    const f = forwardRequest({
      tenantId: 'acme',
      inboundId: 'inb_1',
      action: 2,
      to: 'ops@elsewhere.test',
      recipient: 'support@acme.in.tern.test',
      from: 'ann@sender.test',
      parsed,
      at,
    });
    expect(f).toMatchObject({
      emailId: forwardEmailId('inb_1', 2),
      to: 'ops@elsewhere.test',
      sender: { address: 'ann@sender.test', name: 'Ann Example' },
      subject: 'Help',
      headers: { [FORWARDED_HEADER]: 'inb_1', 'X-Forwarded-Message-Id': '<m1@sender.test>' },
      at,
    });
    expect(f.text).toContain('Please help.');
    expect(f.attachments).toHaveLength(1);
    expect(f.attachments[0]).toMatchObject({ filename: 'a_b.pdf', contentType: 'application/pdf' });
    expect(f.attachments[0]!.content.toString()).toBe('%PDF-1.4 test');
    expect(isForward(parsed)).toBe(false);
    expect(isForward(await simpleParser(raw([`${FORWARDED_HEADER}: inb_0`])))).toBe(true);
  });
});
