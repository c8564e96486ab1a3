// Reading DSNs (RFC 3464) and ARF reports (RFC 5965): the RFCs' own examples, feedback-loop
// reports shaped like the published Yahoo and Microsoft JMRP samples, and what they become.
import { readFileSync } from 'node:fs';
import { deliveryEventSchema } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import {
  eventsOf,
  type FeedbackTarget,
  parseMime,
  type Report,
  reportOf,
  verpLocalParts,
} from '../src/index.js';

const fixture = (name: string, vars: Record<string, string> = {}) => {
  let text = readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
  for (const [k, v] of Object.entries(vars)) text = text.replaceAll(`{{${k}}}`, v);
  return Buffer.from(text.replace(/\r?\n/g, '\r\n'));
};
const reportIn = async (raw: Buffer): Promise<Report> => reportOf(await parseMime(raw));
const AT = new Date('2026-11-25T12:00:00.000Z');

describe('RFC 3464 delivery status notifications', () => {
  it('the simple DSN (Appendix): one failed recipient, status 4.0.0, its diagnostic without the type', async () => {
    expect(await reportIn(fixture('rfc3464-simple.eml'))).toEqual({
      kind: 'dsn',
      envelopeId: null,
      recipients: [
        {
          recipient: 'louisl@larry.slip.umd.edu',
          originalRecipient: 'louisl@larry.slip.umd.edu',
          action: 'failed',
          status: '4.0.0',
          diagnostic: '426 connection timed out',
        },
      ],
    });
  });

  it('the multi-recipient DSN: failed (folded diagnostic unfolded), delayed (comment after the status), failed', async () => {
    const report = await reportIn(fixture('rfc3464-multi.eml'));
    expect(report.kind).toBe('dsn');
    const recipients = report.kind === 'dsn' ? report.recipients : [];
    expect(recipients.map((r) => [r.recipient, r.action, r.status, r.diagnostic])).toEqual([
      [
        'arathib@vnet.ibm.com',
        'failed',
        '5.0.0',
        "550 'arathib@vnet.IBM.COM' is not a registered gateway user",
      ],
      ['johnh@hpnjld.njd.hp.com', 'delayed', '4.0.0', null],
      ['wsnell@sdcc13.ucsd.edu', 'failed', '5.0.0', '550 user unknown'],
    ]);
  });

  it('the delayed DSN: Action after Status is read all the same', async () => {
    const report = await reportIn(fixture('rfc3464-delayed.eml'));
    expect(report).toMatchObject({
      kind: 'dsn',
      recipients: [{ recipient: 'thomas@de-montfort.ac.uk', action: 'delayed', status: '4.0.0' }],
    });
  });

  const target = (to: string, more: string[] = []): FeedbackTarget => ({
    tenantId: 't1',
    emailId: 'em_1',
    recipients: [to, ...more],
    // As a per-recipient VERP address to `to` proves it.
    proven: to,
  });

  it('events: failed 5.x.x → bounced hard with smtpStatus and diagnostic; 4.x.x failed → soft; delayed → delayed', async () => {
    const multi = await reportIn(fixture('rfc3464-multi.eml'));
    const [hard] = eventsOf(target('wsnell@sdcc13.ucsd.edu', ['cc@example.com']), multi, '<r1>', AT);
    expect(hard).toMatchObject({
      type: 'email.bounced',
      tenantId: 't1',
      emailId: 'em_1',
      data: { bounceType: 'hard', smtpStatus: '5.0.0', diagnostic: '550 user unknown' },
    });
    const [delayed] = eventsOf(target('johnh@hpnjld.njd.hp.com'), multi, '<r1>', AT);
    expect(delayed).toMatchObject({ type: 'email.delayed', data: { reason: 'DSN: 4.0.0' } });
    const simple = await reportIn(fixture('rfc3464-simple.eml'));
    const [soft] = eventsOf(target('louisl@larry.slip.umd.edu'), simple, '<r2>', AT);
    expect(soft).toMatchObject({ type: 'email.bounced', data: { bounceType: 'soft', smtpStatus: '4.0.0' } });
    for (const e of [hard, delayed, soft]) expect(deliveryEventSchema.safeParse(e).success).toBe(true);
  });

  it('only the email’s own recipient counts; the same report twice gives the same event ids', async () => {
    const multi = await reportIn(fixture('rfc3464-multi.eml'));
    // Someone else's entries say nothing about this email's `to`.
    expect(eventsOf(target('nobody@example.com', ['cc@example.com']), multi, '<r1>', AT)).toEqual([]);
    const once = eventsOf(target('wsnell@sdcc13.ucsd.edu'), multi, '<r1>', AT);
    const twice = eventsOf(target('wsnell@sdcc13.ucsd.edu'), multi, '<r1>', new Date(AT.getTime() + 5000));
    expect(twice.map((e) => e.id)).toEqual(once.map((e) => e.id));
    expect(eventsOf(target('wsnell@sdcc13.ucsd.edu'), multi, '<other>', AT)[0]!.id).not.toBe(once[0]!.id);
  });

  it('a one-recipient email takes the only entry of a DSN whatever address the relay reports', async () => {
    const simple = await reportIn(fixture('rfc3464-simple.eml'));
    expect(eventsOf(target('alias@example.com'), simple, '<r>', AT)).toHaveLength(1);
  });

  it('delivered and relayed → delivered', () => {
    for (const action of ['delivered', 'relayed'] as const) {
      const report: Report = {
        kind: 'dsn',
        envelopeId: 'em_1',
        recipients: [
          {
            recipient: 'ada@example.com',
            originalRecipient: null,
            action,
            status: '2.0.0',
            diagnostic: null,
          },
        ],
      };
      expect(eventsOf(target('ada@example.com'), report, '<d>', AT)).toMatchObject([
        { type: 'email.delivered' },
      ]);
    }
  });
});

describe('RFC 5965 abuse reports (ARF)', () => {
  it('the RFC example: feedback type, Original-Mail-From and Original-Rcpt-To', async () => {
    expect(await reportIn(fixture('rfc5965-abuse.eml'))).toEqual({
      kind: 'arf',
      feedbackType: 'abuse',
      originalMailFrom: 'somespammer@example.net',
      originalRcptTo: 'user@example.com',
    });
  });

  it('a Yahoo-style report names the VERP address in Original-Mail-From and the returned headers', async () => {
    const verp = 'b+em_Yh0.0123456789abcdef@tern-bounces.acme.test';
    const raw = fixture('yahoo-fbl.eml', { VERP: verp, EMAIL: 'em_Yh0' });
    expect(await reportIn(raw)).toMatchObject({ kind: 'arf', feedbackType: 'abuse', originalMailFrom: verp });
    expect(verpLocalParts(raw.toString('latin1'))).toEqual(['b+em_Yh0.0123456789abcdef']);
  });

  it('a JMRP-style report (no Original-Mail-From): the VERP address is found in the returned message', async () => {
    const verp = 'b+em_Jm1.fedcba9876543210@tern-bounces.acme.test';
    const raw = fixture('jmrp-redacted.eml', { VERP: verp, EMAIL: 'em_Jm1' });
    expect(await reportIn(raw)).toMatchObject({ kind: 'arf', feedbackType: 'abuse', originalMailFrom: null });
    expect(verpLocalParts(raw.toString('latin1'))).toEqual(['b+em_Jm1.fedcba9876543210']);
  });

  it('events: complained { feedbackType }', async () => {
    const report = await reportIn(fixture('rfc5965-abuse.eml'));
    const events = eventsOf(
      { tenantId: 't', emailId: 'em_9', recipients: ['user@example.com'], proven: 'user@example.com' },
      report,
      '<a>',
      AT,
    );
    expect(events).toMatchObject([{ type: 'email.complained', data: { feedbackType: 'abuse' } }]);
    expect(deliveryEventSchema.safeParse(events[0]).success).toBe(true);
  });
});

describe('what is not a report', () => {
  it('an auto-reply, a plain message, a report without recipients: other', async () => {
    const plain = Buffer.from('From: a@b.c\r\nSubject: Out of office\r\n\r\nI am away.\r\n');
    expect(await reportIn(plain)).toEqual({ kind: 'other' });
    const empty = Buffer.from(
      'Content-Type: multipart/report; report-type=delivery-status; boundary="x"\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n--x--\r\n',
    );
    expect(await reportIn(empty)).toEqual({ kind: 'other' });
  });
});
