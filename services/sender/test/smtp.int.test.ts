// The SMTP provider and the sender against a real SMTP server in the test process (`smtp-server`,
// the nodemailer project's server), with real Postgres and the Postgres-table event log.
import { type AddressInfo, createServer } from 'node:net';
import { getTemplate, isSuppressed } from '@tern/api';
import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import { queuedEvent } from '@tern/domain';
import { verpAddress } from '@tern/domains';
import { createEventStream, createPostgresEventLog, type PostgresEventLog } from '@tern/event-log';
import { migratePostgres } from '@tern/stores';
import { simpleParser } from 'mailparser';
import pg from 'pg';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, waitFor } from '../../../test/support/services.js';
import { createSender, createSmtpProvider, type Sender } from '../src/index.js';

type Received = {
  raw: string;
  envelopeTo: string[];
  from: string;
  /** The DSN parameters of MAIL FROM and RCPT TO (RFC 3461: RET, ENVID, NOTIFY). */
  mailArgs: unknown;
  rcptArgs: unknown[];
};

/** Recipient-driven behaviour, like the sandbox: the local part says what the server answers. */
function startSmtp(): Promise<{
  url: string;
  received: Received[];
  rcptCalls: Map<string, number>;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const rcptCalls = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    // Advertises DSN (RFC 3461) so the client's DSN parameters can be read.
    hideDSN: false,
    logger: false,
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      const n = (rcptCalls.get(address.address) ?? 0) + 1;
      rcptCalls.set(address.address, n);
      const local = address.address.split('@')[0]!;
      if (local.startsWith('reject')) {
        const err = new Error('5.1.1 mailbox unavailable') as Error & { responseCode: number };
        err.responseCode = 550;
        return callback(err);
      }
      if (local.startsWith('greylist') && (local.includes('always') || n === 1)) {
        const err = new Error('4.7.1 greylisted, try again later') as Error & { responseCode: number };
        err.responseCode = 451;
        return callback(err);
      }
      return callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          raw: Buffer.concat(chunks).toString('utf8'),
          envelopeTo: session.envelope.rcptTo.map((r) => r.address),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          mailArgs: session.envelope.dsn,
          rcptArgs: session.envelope.rcptTo.map((r) => r.dsn),
        });
        callback();
      });
    },
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.server.address() as AddressInfo;
      resolve({
        url: `smtp://127.0.0.1:${port}`,
        received,
        rcptCalls,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
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
let db: { url: string; drop(): Promise<void> };
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
  db = await createFreshDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
  pool.on('error', () => undefined);
  await migratePostgres(pool);
  log = createPostgresEventLog({ pool, pollIntervalMs: 20 });
  await log.ensureSchema();
}, 60_000);

afterAll(async () => {
  await log?.close();
  await pool?.end();
  await db?.drop();
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
    expect(got.envelopeTo.sort()).toEqual(['ada@example.com', 'audit@example.com', 'cc@example.com']);
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
    expect(got.envelopeTo).toEqual([
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
    expect(smtp.received.find((r) => r.raw.includes('em_multi2'))!.envelopeTo).toEqual(['ok@example.com']);
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

  it('unsigned mail with BOUNCE_DOMAIN: MAIL FROM is the email’s VERP address, DSNs asked for (SPEC §21)', async () => {
    const id = await queue('verp@example.com');
    await finalTypes(id, 'email.sent');
    const got = smtp.received.find((r) => r.raw.includes(id))!;
    expect(got.from).toBe(verpAddress(SENDER_SECRET, TENANT, id, 'bounces.tern.test'));
    expect(got.mailArgs).toMatchObject({ ret: 'HDRS', envid: id });
    expect(got.rcptArgs).toEqual([expect.objectContaining({ notify: ['FAILURE', 'DELAY', 'SUCCESS'] })]);
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
    const got = smtp.received.find((r) => r.raw.includes(id))!;
    expect(got.envelopeTo).toEqual(['ok1@example.com', 'ok2@example.com']);
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
  let relay: SMTPServer;
  let relayUrl: (password: string) => string;
  // What the relay accepts; the test "fixes" the relay by accepting the password Tern has.
  let acceptedPassword = 'rotated-password';
  const rcpts: string[] = [];

  beforeAll(async () => {
    relay = new SMTPServer({
      authMethods: ['PLAIN', 'LOGIN'],
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === 'tern' && auth.password === acceptedPassword)
          return callback(null, { user: 'tern' });
        const err = new Error('5.7.8 Authentication credentials invalid') as Error & { responseCode: number };
        err.responseCode = 535;
        return callback(err);
      },
      onMailFrom(address, _session, callback) {
        if (address.address.startsWith('blocked')) {
          const err = new Error('5.7.1 sender not allowed') as Error & { responseCode: number };
          err.responseCode = 550;
          return callback(err);
        }
        return callback();
      },
      onRcptTo(address, _session, callback) {
        rcpts.push(address.address);
        if (address.address.startsWith('reject')) {
          const err = new Error('5.1.1 mailbox unavailable') as Error & { responseCode: number };
          err.responseCode = 550;
          return callback(err);
        }
        return callback();
      },
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => callback());
      },
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    const { port } = relay.server.address() as AddressInfo;
    relayUrl = (password) => `smtp://tern:${password}@127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => (relay ? relay.close(() => r()) : r()));
  });

  it('the provider: 535 at AUTH and 550 at MAIL FROM are faults; 550 at RCPT TO is a bounce', async () => {
    acceptedPassword = 'rotated-password';
    const wrong = createSmtpProvider({ url: relayUrl('old-password'), timeoutMs: 2000 });
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
    expect(rcpts).not.toContain('ada@example.com');

    const right = createSmtpProvider({ url: relayUrl('rotated-password'), timeoutMs: 2000 });
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
      provider: createSmtpProvider({ url: relayUrl('old-password'), timeoutMs: 2000 }),
      isSuppressed,
      getTemplate,
      tracking: { secret: 'smtp-tracking-secret-0123456789', publicUrl: 'http://127.0.0.1:3000' },
      messageIdDomain: 'tern.test',
      pollIntervalMs: 50,
      // Three quick retries, then long enough for the relay to be fixed before the last ones.
      retryDelaysMs: [100, 100, 3000, 3000, 3000],
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
      expect(rcpts).not.toContain('grace@example.com');
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
