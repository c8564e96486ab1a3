// The SMTP provider and the sender against a real SMTP server in the test process (`smtp-server`,
// the nodemailer project's server), with real Postgres and the Postgres-table event log.
import { type AddressInfo, createServer } from 'node:net';
import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import { listUnsubscribeHeaders, queuedEvent, verifyUnsubscribeToken } from '@tern/domain';
import { createEventStream, type PostgresEventLog } from '@tern/event-log';
import { isSuppressed } from '@tern/read-models';
import { verpAddress } from '@tern/sending-domains';
import { getTemplate } from '@tern/templates';
import { simpleParser } from 'mailparser';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimTestKey } from '../../../test/support/dkim-key.js';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { waitFor } from '../../../test/support/services.js';
import {
  type LoginRelay,
  type SmtpSink,
  smtpError,
  startLoginRelay,
  startSmtpSink,
} from '../../../test/support/smtp-sink.js';
import { createSender, createSmtpProvider, type Sender } from '../src/index.js';

/** The DSN parameters of MAIL FROM and RCPT TO (RFC 3461: RET, ENVID, NOTIFY) are read: DSN is advertised. */
async function startSmtp(): Promise<SmtpSink & { rcptCalls: Map<string, number> }> {
  const rcptCalls = new Map<string, number>();
  // Recipient-driven behaviour, like the sandbox: the local part says what the server answers.
  const sink = await startSmtpSink({
    hideDSN: false,
    onRcptTo(address, _session, callback) {
      const n = (rcptCalls.get(address.address) ?? 0) + 1;
      rcptCalls.set(address.address, n);
      const local = address.address.split('@')[0]!;
      if (local.startsWith('reject')) return callback(smtpError(550, '5.1.1 mailbox unavailable'));
      if (local.startsWith('greylist') && (local.includes('always') || n === 1)) {
        return callback(smtpError(451, '4.7.1 greylisted, try again later'));
      }
      return callback();
    },
  });
  return Object.assign(sink, { rcptCalls });
}

/** A loopback port with nothing listening: connection refused. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let db: LogDatabase;
let pool: pg.Pool;
let log: PostgresEventLog;
const TENANT = 'smtp-tenant';
const SENDER_SECRET = 'smtp-tracking-secret-0123456789';

const message = (id: string, to: string) => ({
  messageId: `<${id}@tern.test>`,
  from: 'Acme <hello@acme.test>',
  to,
  cc: ['cc@example.com'],
  bcc: ['audit@example.com'],
  replyTo: 'reply@acme.test',
  subject: 'Héllo from Tern',
  html: '<p>Hi</p>',
  text: 'Hi',
  headers: { 'X-Campaign': 'c-1', 'X-Tern-Email-Id': id },
});

beforeAll(async () => {
  smtp = await startSmtp();
  db = await openLogDatabase();
  ({ pool, log } = db);
}, 60_000);

afterAll(async () => {
  await db?.close();
  await smtp?.close();
});

describe('SMTP provider (nodemailer → smtp-server)', () => {
  it('delivers the message with its headers and the Message-ID derived from the email id', async () => {
    const provider = createSmtpProvider({ url: smtp.url });
    const result = await provider.send(message('em_smtp1', 'ada@example.com'), {
      tenantId: TENANT,
      emailId: 'em_smtp1',
    });
    expect(result).toEqual({ kind: 'sent', messageId: '<em_smtp1@tern.test>' });
    const got = smtp.received.at(-1)!;
    expect(got.rcptTo.sort()).toEqual(['ada@example.com', 'audit@example.com', 'cc@example.com']);
    const parsed = await simpleParser(got.raw);
    expect(parsed.messageId).toBe('<em_smtp1@tern.test>');
    expect(parsed.subject).toBe('Héllo from Tern');
    expect(parsed.from?.text).toBe('"Acme" <hello@acme.test>');
    expect(parsed.headers.get('to')).toMatchObject({ text: 'ada@example.com' });
    expect(parsed.headers.get('cc')).toMatchObject({ text: 'cc@example.com' });
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(parsed.headers.get('reply-to')).toMatchObject({ text: 'reply@acme.test' });
    expect(parsed.headers.get('x-campaign')).toBe('c-1');
    expect(parsed.headers.get('x-tern-email-id')).toBe('em_smtp1');
    expect(parsed.html).toContain('<p>Hi</p>');
    expect(parsed.text?.trim()).toBe('Hi');
    await provider.close?.();
  });

  it('signed (one transaction for every recipient): the same envelope and headers, its own Message-ID, DKIM pass', async () => {
    const key = dkimTestKey('acme.test');
    const provider = createSmtpProvider({ url: smtp.url });
    const result = await provider.send(message('em_smtp_signed', 'ada@example.com'), {
      tenantId: TENANT,
      emailId: 'em_smtp_signed',
      signing: { dkim: { domain: 'acme.test', selector: 'tern1', privateKey: key.privateKey } },
    });
    expect(result).toEqual({ kind: 'sent', messageId: '<em_smtp_signed@tern.test>' });
    const got = smtp.received.find((r) => r.raw.includes('em_smtp_signed'))!;
    expect(got.mailFrom).toBe('hello@acme.test');
    expect(got.rcptTo.sort()).toEqual(['ada@example.com', 'audit@example.com', 'cc@example.com']);
    const parsed = await simpleParser(got.raw);
    expect(parsed.messageId).toBe('<em_smtp_signed@tern.test>');
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(parsed.headers.get('x-tern-email-id')).toBe('em_smtp_signed');
    const verdict = await key.verify(got.raw);
    expect(verdict.results.map((r) => [r.signingDomain, r.status.result])).toEqual([['acme.test', 'pass']]);
    await provider.close?.();
  });

  it('5xx → bounced; 4xx → delayed; connection refused → delayed', async () => {
    const provider = createSmtpProvider({ url: smtp.url });
    const alone = (id: string, to: string) => ({ ...message(id, to), cc: [], bcc: [] });
    const bounced = await provider.send(alone('em_r', 'reject@example.com'), {
      tenantId: TENANT,
      emailId: 'em_r',
    });
    expect(bounced).toMatchObject({ kind: 'bounced', reason: expect.stringContaining('550') });
    const delayed = await provider.send(alone('em_g', 'greylist-always@example.com'), {
      tenantId: TENANT,
      emailId: 'em_g',
    });
    expect(delayed).toMatchObject({ kind: 'delayed', reason: expect.stringContaining('451') });
    const refused = createSmtpProvider({ url: `smtp://127.0.0.1:${await closedPort()}`, timeoutMs: 2000 });
    const down = await refused.send(message('em_d', 'ada@example.com'), {
      tenantId: TENANT,
      emailId: 'em_d',
    });
    expect(down).toMatchObject({
      kind: 'delayed',
      reason: expect.stringMatching(/ECONNECTION|ECONNREFUSED/),
    });
  });
});

describe('several recipients over SMTP (SPEC §22)', () => {
  it('envelope = to + cc + bcc, each once; To and Cc headers only; Bcc in no header', async () => {
    const provider = createSmtpProvider({ url: smtp.url });
    const result = await provider.send(
      {
        ...message('em_multi1', ''),
        to: ['ada@example.com', 'Bob@Example.com'],
        cc: ['cc1@example.com', 'ada@example.com'],
        bcc: ['hidden1@example.com', 'hidden2@example.com'],
      },
      {
        tenantId: TENANT,
        emailId: 'em_multi1',
        envelopeFrom: 'b+em_multi1.0123456789abcdef@bounces.tern.test',
      },
    );
    expect(result).toEqual({ kind: 'sent', messageId: '<em_multi1@tern.test>' });
    const got = smtp.received.find((r) => r.raw.includes('em_multi1'))!;
    // Every recipient once (ada@ is in to and cc), whatever the custom envelope sender.
    expect(got.rcptTo).toEqual([
      'ada@example.com',
      'Bob@example.com',
      'cc1@example.com',
      'hidden1@example.com',
      'hidden2@example.com',
    ]);
    const parsed = await simpleParser(got.raw);
    const addresses = (h: unknown) =>
      (Array.isArray(h) ? h : [h]).flatMap((a: { value: { address: string }[] }) =>
        a.value.map((v) => v.address),
      );
    expect(addresses(parsed.to)).toEqual(['ada@example.com', 'Bob@example.com']);
    expect(addresses(parsed.cc)).toEqual(['cc1@example.com', 'ada@example.com']);
    expect(parsed.bcc).toBeUndefined();
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(got.raw).not.toMatch(/hidden[12]@example\.com/);
    await provider.close?.();
  });

  it('a refused recipient of several: the others get it, the refused one its own bounce (5xx hard, 4xx soft)', async () => {
    const provider = createSmtpProvider({ url: smtp.url });
    const result = await provider.send(
      {
        ...message('em_multi2', ''),
        to: ['reject-one@example.com', 'ok@example.com'],
        cc: ['greylist-always-c@example.com'],
        bcc: [],
      },
      { tenantId: TENANT, emailId: 'em_multi2' },
    );
    expect(result).toMatchObject({
      kind: 'sent',
      followUps: [
        {
          type: 'email.bounced',
          bounceType: 'hard',
          recipient: 'reject-one@example.com',
          reason: expect.stringContaining('550'),
        },
        {
          type: 'email.bounced',
          bounceType: 'soft',
          recipient: 'greylist-always-c@example.com',
          reason: expect.stringContaining('451'),
        },
      ],
    });
    expect(smtp.received.find((r) => r.raw.includes('em_multi2'))!.rcptTo).toEqual(['ok@example.com']);
    const all = await provider.send(
      { ...message('em_multi3', ''), to: ['reject-a@example.com', 'reject-b@example.com'], cc: [], bcc: [] },
      { tenantId: TENANT, emailId: 'em_multi3' },
    );
    expect(all).toMatchObject({
      kind: 'bounced',
      recipients: [
        { recipient: 'reject-a@example.com', bounceType: 'hard' },
        { recipient: 'reject-b@example.com', bounceType: 'hard' },
      ],
    });
    await provider.close?.();
  });
});

describe('sender over SMTP: outcomes appended to the log, retries with backoff, then failed', () => {
  let sender: Sender;
  let counter = 0;

  /** Writes a send the way the API does and appends its email.queued. */
  async function queue(to: string | string[], more: Record<string, unknown> = {}): Promise<string> {
    const id = `em_smtp_${++counter}_${Date.now()}`;
    await pool.query(
      `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message) VALUES ($1, $2, 'awaiting_log', now(), $3)`,
      [TENANT, id, JSON.stringify({ from: 'hello@acme.test', to, subject: 'S', text: 'T', ...more })],
    );
    const toEmail = typeof to === 'string' ? to : to[0]!;
    await createEventStream(log).append([
      queuedEvent({ tenantId: TENANT, emailId: id, at: new Date(), toEmail, subject: 'S' }),
    ]);
    return id;
  }

  /** Every event of the email in the log, in log order. */
  async function eventsOf(id: string): Promise<DeliveryEvent[]> {
    const { rows } = await pool.query<{ value: string }>(
      'SELECT value FROM event_log WHERE key = $1 ORDER BY seq',
      [id],
    );
    return rows.map((r) => deliveryEventSchema.parse(JSON.parse(r.value)));
  }

  const finalTypes = (id: string, last: string) =>
    waitFor(
      async () => {
        const events = await eventsOf(id);
        return events.at(-1)?.type === last ? events.map((e) => e.type) : null;
      },
      { timeoutMs: 20_000, description: `${id} ends with ${last}` },
    );

  beforeAll(async () => {
    sender = createSender({
      pool,
      log: createEventStream(log),
      provider: createSmtpProvider({ url: smtp.url, timeoutMs: 2000 }),
      isSuppressed,
      getTemplate,
      tracking: { secret: SENDER_SECRET, publicUrl: 'http://127.0.0.1:3000' },
      messageIdDomain: 'tern.test',
      bounceDomain: 'bounces.tern.test',
      pollIntervalMs: 50,
      retryDelaysMs: [100, 150, 200, 250, 300],
    });
    await sender.start();
  });
  afterAll(async () => {
    await sender?.stop();
  });

  it('accepted → email.sent {provider: smtp, messageId}', async () => {
    const id = await queue('grace@example.com');
    expect(await finalTypes(id, 'email.sent')).toEqual(['email.queued', 'email.sent']);
    const sent = (await eventsOf(id)).at(-1)!;
    expect(sent.data).toEqual({ provider: 'smtp', messageId: `<${id}@tern.test>` });
    const parsed = await simpleParser(smtp.received.find((r) => r.raw.includes(id))!.raw);
    expect(parsed.messageId).toBe(`<${id}@tern.test>`);
  });

  it('campaign mail: the List-Unsubscribe headers its row names, for its recipient (RFC 8058)', async () => {
    // The row holds what the headers unsubscribe from (`unsubscribe`), not the headers.
    const id = await queue('unsub@example.com', { unsubscribe: 'campaign:cmp_unsub' });
    expect(await finalTypes(id, 'email.sent')).toEqual(['email.queued', 'email.sent']);
    const parsed = await simpleParser(smtp.received.find((r) => r.raw.includes(id))!.raw);
    const header = (parsed.headerLines.find((h) => h.key === 'list-unsubscribe')?.line ?? '').replace(
      /\r?\n(?=[ \t])/g,
      '',
    );
    const link =
      /<(http:\/\/127\.0\.0\.1:3000\/u\/([A-Za-z0-9_-]+))>, <mailto:unsubscribe@\[127\.0\.0\.1\]\?subject=unsubscribe%20\2>/.exec(
        header,
      );
    expect(link, header).not.toBeNull();
    expect(verifyUnsubscribeToken(SENDER_SECRET, link![2]!)).toEqual({
      tenantId: TENANT,
      email: 'unsub@example.com',
      source: 'campaign:cmp_unsub',
    });
    expect(parsed.headerLines.find((h) => h.key === 'list-unsubscribe-post')?.line).toBe(
      'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
    );
    // What the sender adds is what `listUnsubscribeHeaders` makes: the link the api answers.
    expect(header).toBe(
      `List-Unsubscribe: ${
        listUnsubscribeHeaders({
          tenantId: TENANT,
          email: 'unsub@example.com',
          source: 'campaign:cmp_unsub',
          publicUrl: 'http://127.0.0.1:3000',
          secret: SENDER_SECRET,
        })['List-Unsubscribe']
      }`,
    );
    // A transactional send (no `unsubscribe`) gets none.
    const plain = await queue('plain-unsub@example.com');
    await finalTypes(plain, 'email.sent');
    const plainParsed = await simpleParser(smtp.received.find((r) => r.raw.includes(plain))!.raw);
    expect(plainParsed.headerLines.some((h) => h.key.startsWith('list-unsubscribe'))).toBe(false);
  });

  it('unsigned mail with BOUNCE_DOMAIN: MAIL FROM is the email’s VERP address, DSNs asked for (SPEC §21)', async () => {
    const id = await queue('verp@example.com');
    await finalTypes(id, 'email.sent');
    const got = smtp.received.find((r) => r.raw.includes(id))!;
    // Per recipient (issue 40, item 2): recipient 0, the only one, in the per-recipient form.
    expect(got.mailFrom).toBe(verpAddress(SENDER_SECRET, TENANT, id, 'bounces.tern.test', 0));
    expect(got.mailDsn).toMatchObject({ ret: 'HDRS', envid: id });
    expect(got.rcptDsn).toEqual([expect.objectContaining({ notify: ['FAILURE', 'DELAY', 'SUCCESS'] })]);
  });

  it('several recipients: a suppressed one leaves the envelope, a refused one bounces, each named (SPEC §22)', async () => {
    await pool.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source) VALUES ($1, 'blocked-x@example.com', 'manual', 'manual')
       ON CONFLICT DO NOTHING`,
      [TENANT],
    );
    const id = await queue(['ok1@example.com', 'reject-z@example.com'], {
      cc: ['Blocked-X@example.com'],
      bcc: ['ok2@example.com'],
    });
    await finalTypes(id, 'email.bounced');
    const events = await eventsOf(id);
    expect(events.map((e) => [e.type, (e.data as { recipient?: string }).recipient])).toEqual([
      ['email.queued', undefined],
      ['email.suppressed', 'Blocked-X@example.com'],
      ['email.sent', undefined],
      ['email.bounced', 'reject-z@example.com'],
    ]);
    // Ids name the recipient's slot in the envelope, never its address.
    expect(events.slice(1).map((e) => e.id)).toEqual([
      `${id}:a1:suppressed:r2`,
      `${id}:a1:sent`,
      `${id}:a1:bounced:r1`,
    ]);
    // One envelope per recipient (issue 40, item 2), each with the VERP address of its place in
    // the stored envelope (to: ok1 0, reject-z 1; cc: Blocked-X 2; bcc: ok2 3).
    const copies = smtp.received
      .filter((r) => r.raw.includes(id))
      .sort((a, b) => a.rcptTo[0]!.localeCompare(b.rcptTo[0]!));
    expect(copies.map((c) => [c.rcptTo, c.mailFrom])).toEqual([
      [['ok1@example.com'], verpAddress(SENDER_SECRET, TENANT, id, 'bounces.tern.test', 0)],
      [['ok2@example.com'], verpAddress(SENDER_SECRET, TENANT, id, 'bounces.tern.test', 3)],
    ]);
    const got = copies[0]!;
    const parsed = await simpleParser(got.raw);
    expect(parsed.headers.has('cc')).toBe(false);
    expect(got.raw).not.toMatch(/blocked-x|ok2@/i);
  });

  it('5xx → email.bounced hard, never retried', async () => {
    const id = await queue('reject-me@example.com');
    expect(await finalTypes(id, 'email.bounced')).toEqual(['email.queued', 'email.bounced']);
    expect((await eventsOf(id)).at(-1)!.data).toMatchObject({ bounceType: 'hard' });
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.rcptCalls.get('reject-me@example.com')).toBe(1);
  });

  it('4xx → email.delayed, then retried and sent', async () => {
    const id = await queue('greylist-once@example.com');
    expect(await finalTypes(id, 'email.sent')).toEqual(['email.queued', 'email.delayed', 'email.sent']);
    expect(smtp.rcptCalls.get('greylist-once@example.com')).toBe(2);
  });

  it('still refused after every retry (6 attempts) → email.failed', async () => {
    const id = await queue('greylist-always@example.com');
    const before = smtp.rcptCalls.get('greylist-always@example.com') ?? 0;
    const types = await finalTypes(id, 'email.failed');
    expect(types).toEqual(['email.queued', ...Array(6).fill('email.delayed'), 'email.failed']);
    expect((smtp.rcptCalls.get('greylist-always@example.com') ?? 0) - before).toBe(6);
    const { rows } = await pool.query('SELECT state, attempts FROM outgoing_emails WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ state: 'done', attempts: 6 });
  });
});

/**
 * Issue 24 item 13: a relay that requires AUTH and refuses Tern's password answers 535 before any
 * recipient is named. That is the relay's problem, not the recipient's: retried with backoff
 * (`email.delayed` naming the 535), the provider reported failing, nothing bounced.
 */
describe('relay refusing the login (535) or the envelope sender: retried, never a bounce', () => {
  let relay: LoginRelay;
  // What the relay accepts; the test "fixes" the relay by accepting the password Tern has.
  let acceptedPassword = 'rotated-password';

  beforeAll(async () => {
    relay = await startLoginRelay(() => acceptedPassword);
  });
  afterAll(async () => {
    await relay?.close();
  });

  it('the provider: 535 at AUTH and 550 at MAIL FROM are faults; 550 at RCPT TO is a bounce', async () => {
    acceptedPassword = 'rotated-password';
    const wrong = createSmtpProvider({ url: relay.urlWith('old-password'), timeoutMs: 2000 });
    const refused = await wrong.send(message('em_auth', 'ada@example.com'), {
      tenantId: TENANT,
      emailId: 'em_auth',
    });
    expect(refused).toMatchObject({
      kind: 'delayed',
      reason: expect.stringContaining('535'),
      fault: { step: expect.stringMatching(/^AUTH /), code: '535' },
    });
    expect(await wrong.check?.()).toMatchObject({ code: '535' });
    expect(relay.rcpts).not.toContain('ada@example.com');

    const right = createSmtpProvider({ url: relay.urlWith('rotated-password'), timeoutMs: 2000 });
    expect(await right.check?.()).toBeNull();
    const blocked = await right.send(
      { ...message('em_mf', 'ada@example.com'), from: 'blocked@acme.test' },
      { tenantId: TENANT, emailId: 'em_mf' },
    );
    expect(blocked).toMatchObject({ kind: 'delayed', fault: { step: 'MAIL FROM', code: '550' } });
    const bounced = await right.send(
      { ...message('em_rj', 'reject@example.com'), cc: [], bcc: [] },
      {
        tenantId: TENANT,
        emailId: 'em_rj',
      },
    );
    expect(bounced).toMatchObject({ kind: 'bounced', reason: expect.stringContaining('550') });
    expect(bounced).not.toHaveProperty('fault');
    await wrong.close?.();
    await right.close?.();
  });

  it('the sender: email.delayed naming the 535, the provider failing until the relay takes the login again', async () => {
    acceptedPassword = 'rotated-password';
    const faults: string[] = [];
    const sender = createSender({
      pool,
      log: createEventStream(log),
      provider: createSmtpProvider({ url: relay.urlWith('old-password'), timeoutMs: 2000 }),
      isSuppressed,
      getTemplate,
      tracking: { secret: 'smtp-tracking-secret-0123456789', publicUrl: 'http://127.0.0.1:3000' },
      messageIdDomain: 'tern.test',
      pollIntervalMs: 50,
      // Quick retries, then long enough for the relay to be fixed before the last ones. The first
      // wait outlasts a round's writes (rows and outcomes, the append, the outbox's clear), so the
      // first runOnce attempts once, however slow the machine.
      retryDelaysMs: [1000, 100, 3000, 3000, 3000],
      providerCheckIntervalMs: 200,
      onProviderFault: (f) => faults.push(`${f.step} ${f.code}`),
      group: 'tern-sender-auth-test',
    });
    const id = `em_auth_${Date.now()}`;
    await pool.query(
      `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message) VALUES ($1, $2, 'pending', now(), $3)`,
      [
        TENANT,
        id,
        JSON.stringify({ from: 'hello@acme.test', to: 'grace@example.com', subject: 'S', text: 'T' }),
      ],
    );
    const typesOf = async () => {
      const { rows } = await pool.query<{ value: string }>(
        'SELECT value FROM event_log WHERE key = $1 ORDER BY seq',
        [id],
      );
      return rows.map((r) => deliveryEventSchema.parse(JSON.parse(r.value)));
    };
    expect(sender.providerHealth()).toEqual({ failing: false });
    await sender.runOnce();
    try {
      const first = await typesOf();
      expect(first.map((e) => e.type)).toEqual(['email.delayed']);
      expect(first[0]!.data).toMatchObject({ reason: expect.stringContaining('535') });
      expect(sender.providerHealth()).toMatchObject({ failing: true, fault: { code: '535' } });
      expect(faults[0]).toMatch(/^AUTH \w+ 535$/);
      // Retries with backoff, every one delayed; never bounced, the recipient never named.
      await sender.start();
      await waitFor(async () => (await typesOf()).length >= 3, {
        timeoutMs: 10_000,
        description: '3 delays',
      });
      expect((await typesOf()).every((e) => e.type === 'email.delayed')).toBe(true);
      expect(relay.rcpts).not.toContain('grace@example.com');
      // The relay takes the login again: the provider's check notices without any mail.
      acceptedPassword = 'old-password';
      await waitFor(async () => !sender.providerHealth().failing, {
        timeoutMs: 10_000,
        description: 'provider works again',
      });
      const types = await waitFor(
        async () => {
          const t = (await typesOf()).map((e) => e.type);
          return t.at(-1) === 'email.sent' ? t : null;
        },
        { timeoutMs: 10_000, description: 'sent once the relay takes the login' },
      );
      expect(types).not.toContain('email.bounced');
    } finally {
      await sender.stop();
    }
  });
});
