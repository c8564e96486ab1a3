// The bounce mailbox over a real socket (nodemailer's SMTP client → smtp-server), with real
// Postgres and the Postgres-table event log: who may deliver to it, how a report finds its email
// (VERP + HMAC, never the content), what it appends, and what it refuses (SPEC §21).
import { readFileSync } from 'node:fs';
import { createEventStream, type PostgresEventLog } from '@tern/event-log';
import { verpAddress } from '@tern/sending-domains';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverRaw, dsnReport, loggedEvents } from '../../../test/support/bounce-mail.js';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { waitFor } from '../../../test/support/services.js';
import { type BounceMailbox, createBounceMailbox, type MessageOutcome } from '../src/index.js';
import { insertSentEmail, testMailbox } from './test-mailbox.js';

const SECRET = 'bounce-mailbox-test-secret-0123456789';
const BOUNCE_DOMAIN = 'bounces.tern.test';
const VERIFIED = 'acme.test';
const PENDING = 'pending.test';
const T1 = 'tenant-one';
const T2 = 'tenant-two';

let db: LogDatabase;
let pool: pg.Pool;
let log: PostgresEventLog;
let mailbox: BounceMailbox;
let port: number;
const outcomes: MessageOutcome[] = [];

const insertEmail = (tenantId: string, id: string, to: string, cc: string[] = []) =>
  insertSentEmail(pool, tenantId, id, to, cc);

async function insertDomain(tenantId: string, name: string, status: 'verified' | 'pending'): Promise<void> {
  const records = [
    {
      purpose: 'return_path_mx',
      type: 'MX',
      name: `tern-bounces.${name}`,
      value: 'mx.tern.test',
      status: 'verified',
    },
  ];
  await pool.query(
    `INSERT INTO sending_domains (tenant_id, id, name, selector, private_key_enc, records, status,
                                  created_at, updated_at, pending_since)
     VALUES ($1, $2, $3, 'tern202611', 'sealed', $4, $5, now(), now(), now())`,
    [tenantId, `dom_${name.replace(/\W/g, '')}`, name, JSON.stringify(records), status],
  );
}

const logged = (emailId: string) => loggedEvents(pool, emailId);
/** Sends raw bytes to the mailbox; the server's answer (or its refusal) as `{ ok, code, response }`. */
const deliver = (to: string[], raw: string | Buffer, from = '') => deliverRaw(port, to, raw, from);
const dsn = (finalRecipient: string, action: string, status: string, diagnostic: string, id = 'r1') =>
  dsnReport({
    finalRecipient,
    action,
    status,
    diagnostic,
    id,
    to: `postmaster@${BOUNCE_DOMAIN}`,
    subject: 'Undelivered Mail Returned to Sender',
    notice: 'I am sorry.',
  });

beforeAll(async () => {
  db = await openLogDatabase({ pollIntervalMs: 50 });
  ({ pool, log } = db);
  await insertDomain(T1, VERIFIED, 'verified');
  await insertDomain(T1, PENDING, 'pending');
  mailbox = testMailbox(pool, log, {
    secret: SECRET,
    bounceDomain: BOUNCE_DOMAIN,
    onMessage: (o) => outcomes.push(o),
  });
  port = await mailbox.start();
}, 60_000);

afterAll(async () => {
  await mailbox?.stop();
  await db?.close();
});

describe('who may deliver to the bounce mailbox', () => {
  it('BOUNCE_DOMAIN and the bounce host of a verified domain: accepted; a pending domain or any other: 550 at RCPT TO', async () => {
    const plain = 'From: a@b.test\r\nSubject: hi\r\n\r\nhello\r\n';
    expect((await deliver([`anything@${BOUNCE_DOMAIN}`], plain)).ok).toBe(true);
    expect((await deliver([`fbl@tern-bounces.${VERIFIED}`], plain)).ok).toBe(true);
    for (const to of [
      `x@tern-bounces.${PENDING}`,
      `x@${VERIFIED}`,
      'x@example.com',
      `x@evil.${BOUNCE_DOMAIN}`,
    ]) {
      const refused = await deliver([to], plain);
      expect(refused, to).toMatchObject({ ok: false, code: 550 });
    }
  });
});

describe('DSNs (RFC 3464) tied by VERP', () => {
  it('a hard bounce to the VERP address → email.bounced { hard, smtpStatus, diagnostic }; delivered twice → one event id', async () => {
    await insertEmail(T1, 'em_hard1', 'Ada@Example.com', ['cc@example.com']);
    // Two recipients: the address of Ada's own copy proves the report is about her (issue 40, item 2).
    const to = verpAddress(SECRET, T1, 'em_hard1', `tern-bounces.${VERIFIED}`, 0);
    const raw = dsn('ada@example.com', 'failed', '5.1.1', '550 5.1.1 <ada@example.com>: User unknown');
    const answer = await deliver([to], raw);
    expect(answer.ok, answer.response).toBe(true);
    const [event] = await logged('em_hard1');
    expect(event).toMatchObject({
      type: 'email.bounced',
      tenantId: T1,
      emailId: 'em_hard1',
      data: {
        bounceType: 'hard',
        smtpStatus: '5.1.1',
        diagnostic: '550 5.1.1 <ada@example.com>: User unknown',
      },
    });
    expect((await deliver([to], raw)).ok).toBe(true);
    const twice = await logged('em_hard1');
    expect(new Set(twice.map((e) => e.id))).toEqual(new Set([event!.id]));
  });

  it('4.x.x failed → soft; delayed → email.delayed; relayed → email.delivered; BOUNCE_DOMAIN works like a domain’s host', async () => {
    await insertEmail(T1, 'em_multi', 'bob@example.com');
    const to = verpAddress(SECRET, T1, 'em_multi', BOUNCE_DOMAIN);
    await deliver([to], dsn('bob@example.com', 'delayed', '4.4.1', 'connect to mx: timed out', 'd1'));
    await deliver([to], dsn('bob@example.com', 'failed', '4.2.2', '452 mailbox full', 'd2'));
    await deliver([to], dsn('bob@example.com', 'relayed', '2.0.0', '250 ok', 'd3'));
    const events = await logged('em_multi');
    expect(events.map((e) => [e.type, e.type === 'email.bounced' ? e.data.bounceType : null])).toEqual([
      ['email.delayed', null],
      ['email.bounced', 'soft'],
      ['email.delivered', null],
    ]);
  });

  it('a forged or altered MAC, another tenant’s MAC, an unknown email: answered, dropped, nothing appended', async () => {
    await insertEmail(T1, 'em_forge', 'eve@example.com');
    await insertEmail(T2, 'em_other', 'zed@example.com');
    const genuine = verpAddress(SECRET, T1, 'em_forge', BOUNCE_DOMAIN);
    const local = genuine.split('@')[0]!;
    const altered = `${local.slice(0, -1)}${local.endsWith('0') ? '1' : '0'}@${BOUNCE_DOMAIN}`;
    const raw = dsn('eve@example.com', 'failed', '5.1.1', '550 no', 'f1');
    const before = outcomes.length;
    for (const to of [
      altered,
      verpAddress('another-secret', T1, 'em_forge', BOUNCE_DOMAIN),
      // T2's email named with T1's MAC (the MAC covers the tenant).
      `b+em_other.${verpAddress(SECRET, T1, 'em_other', BOUNCE_DOMAIN).split('.')[1]!.split('@')[0]}@${BOUNCE_DOMAIN}`,
      verpAddress(SECRET, T1, 'em_missing', BOUNCE_DOMAIN),
      `bounces@${BOUNCE_DOMAIN}`,
    ]) {
      expect((await deliver([to], raw)).ok, to).toBe(true);
    }
    expect(outcomes.slice(before)).toEqual(Array(5).fill({ kind: 'dropped', reason: 'no_genuine_verp' }));
    expect(await logged('em_forge')).toEqual([]);
    expect(await logged('em_other')).toEqual([]);
  });

  it('an MTA that folded the local part to lower case still finds the email', async () => {
    await insertEmail(T1, 'em_CaseMix', 'case@example.com');
    const to = verpAddress(SECRET, T1, 'em_CaseMix', BOUNCE_DOMAIN).toLowerCase();
    expect((await deliver([to], dsn('case@example.com', 'failed', '5.0.0', '550 gone', 'c1'))).ok).toBe(true);
    expect(await logged('em_CaseMix')).toMatchObject([{ type: 'email.bounced', emailId: 'em_CaseMix' }]);
  });
});

describe('ARF complaints (RFC 5965)', () => {
  it('a report to the feedback-loop address naming the VERP address → email.complained { feedbackType }', async () => {
    await insertEmail(T1, 'em_arf1', 'ada@yahoo.example');
    const verp = verpAddress(SECRET, T1, 'em_arf1', `tern-bounces.${VERIFIED}`);
    const raw = readFileSync(new URL('./fixtures/yahoo-fbl.eml', import.meta.url), 'utf8')
      .replaceAll('{{VERP}}', verp)
      .replaceAll('{{EMAIL}}', 'em_arf1')
      .replace(/\r?\n/g, '\r\n');
    expect((await deliver([`fbl@tern-bounces.${VERIFIED}`], raw, 'feedbackloop@yahoo.example')).ok).toBe(
      true,
    );
    expect(await logged('em_arf1')).toMatchObject([
      { type: 'email.complained', tenantId: T1, data: { feedbackType: 'abuse' } },
    ]);
  });
});

describe('ARF without Original-Mail-From', () => {
  it('a JMRP-style report: the VERP address of the returned message names the email; a forged one there is dropped', async () => {
    await insertEmail(T1, 'em_jmrp', 'ada@hotmail.example');
    const report = (verp: string, id: string) =>
      readFileSync(new URL('./fixtures/jmrp-redacted.eml', import.meta.url), 'utf8')
        .replaceAll('{{VERP}}', verp)
        .replaceAll('{{EMAIL}}', 'em_jmrp')
        .replace('Subject: complaint', `Message-ID: <${id}@hotmail.example>\nSubject: complaint`)
        .replace(/\r?\n/g, '\r\n');
    const forged = `b+em_jmrp.0123456789abcdef@tern-bounces.${VERIFIED}`;
    expect((await deliver([`jmrp@tern-bounces.${VERIFIED}`], report(forged, 'j0'))).ok).toBe(true);
    expect(await logged('em_jmrp')).toEqual([]);
    const genuine = verpAddress(SECRET, T1, 'em_jmrp', `tern-bounces.${VERIFIED}`);
    expect((await deliver([`jmrp@tern-bounces.${VERIFIED}`], report(genuine, 'j1'))).ok).toBe(true);
    expect(await logged('em_jmrp')).toMatchObject([
      { type: 'email.complained', data: { feedbackType: 'abuse' } },
    ]);
  });
});

describe('limits and hostile input', () => {
  it('a message over BOUNCE_SMTP_MAX_BYTES → 552; malformed MIME is answered and the mailbox keeps working', async () => {
    const big = await deliver([`x@${BOUNCE_DOMAIN}`], `Subject: big\r\n\r\n${'x'.repeat(100 * 1024)}\r\n`);
    expect(big).toMatchObject({ ok: false, code: 552 });
    const nested = Array.from(
      { length: 3_000 },
      (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`,
    ).join('');
    for (const raw of [
      nested.slice(0, 60_000),
      'Content-Type: multipart/report; boundary=\r\n\r\n--\r\n--\r\n',
      Buffer.from(Array.from({ length: 5_000 }, (_, i) => (i * 7919) % 256)),
      'Content-Type: message/delivery-status\r\n\r\nAction: failed\r\nFinal-Recipient: rfc822;\r\n',
    ]) {
      const answer = await deliver([`x@${BOUNCE_DOMAIN}`], raw);
      expect(answer.ok, answer.response).toBe(true);
    }
    await insertEmail(T1, 'em_after', 'after@example.com');
    const to = verpAddress(SECRET, T1, 'em_after', BOUNCE_DOMAIN);
    expect((await deliver([to], dsn('after@example.com', 'failed', '5.1.1', '550 x', 'a1'))).ok).toBe(true);
    expect(await logged('em_after')).toHaveLength(1);
  });

  it('per-client rate limit: past BOUNCE_SMTP_RATE_PER_MINUTE → 421', async () => {
    const limited = createBounceMailbox({
      pool,
      log: createEventStream(log),
      secret: SECRET,
      bounceDomain: BOUNCE_DOMAIN,
      host: '127.0.0.1',
      port: 0,
      maxBytes: 64 * 1024,
      ratePerMinute: 3,
      // One fixed minute: the window cannot roll over during the test.
      now: () => new Date('2026-11-25T12:00:30Z'),
    });
    const limitedPort = await limited.start();
    const saved = port;
    port = limitedPort;
    try {
      const answers = [];
      for (let i = 0; i < 5; i++)
        answers.push(await deliver([`x@${BOUNCE_DOMAIN}`], 'Subject: n\r\n\r\nx\r\n'));
      expect(answers.map((a) => a.ok)).toEqual([true, true, true, false, false]);
      expect(answers[3]!.code).toBe(421);
    } finally {
      port = saved;
      await limited.stop();
    }
  });

  it('the log unavailable → 451 (the MTA retries), nothing lost', async () => {
    await insertEmail(T1, 'em_451', 'retry@example.com');
    const failing = createBounceMailbox({
      pool,
      log: {
        append: async () => {
          throw new Error('log down');
        },
      },
      secret: SECRET,
      bounceDomain: BOUNCE_DOMAIN,
      host: '127.0.0.1',
      port: 0,
      maxBytes: 64 * 1024,
      ratePerMinute: 100,
    });
    const failingPort = await failing.start();
    const saved = port;
    port = failingPort;
    const to = verpAddress(SECRET, T1, 'em_451', BOUNCE_DOMAIN);
    try {
      expect(await deliver([to], dsn('retry@example.com', 'failed', '5.1.1', '550 x', 'l1'))).toMatchObject({
        ok: false,
        code: 451,
      });
    } finally {
      port = saved;
      await failing.stop();
    }
    // The retry reaches a working mailbox.
    expect((await deliver([to], dsn('retry@example.com', 'failed', '5.1.1', '550 x', 'l1'))).ok).toBe(true);
    await waitFor(async () => ((await logged('em_451')).length === 1 ? true : undefined), {
      timeoutMs: 5_000,
      description: 'the retried DSN in the log',
    });
  });
});
