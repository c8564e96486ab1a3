// The bounce mailbox under abuse (issue 40, items 2, 3, 6, 7, 11 and the fuzz of "Also keep"),
// over real sockets (nodemailer and raw sockets → smtp-server), with real Postgres and the
// Postgres-table event log.

import type { PostgresEventLog } from '@tern/event-log';
import { verpAddress } from '@tern/sending-domains';
import { DEFAULT_SMTP_LISTENER_LIMITS, type SmtpListenerLimits } from '@tern/smtp-limits';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverRaw, dsnReport, loggedEvents } from '../../../test/support/bounce-mail.js';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { waitFor } from '../../../test/support/services.js';
import { type RawSmtp, rawSmtp } from '../../../test/support/smtp-raw.js';
import type { BounceMailbox } from '../src/index.js';
import { insertSentEmail, testMailbox } from './test-mailbox.js';

const SECRET = 'bounce-abuse-test-secret-0123456789';
const BOUNCE_DOMAIN = 'bounces.tern.test';
const T1 = 'tenant-abuse';

let db: LogDatabase;
let pool: pg.Pool;
let log: PostgresEventLog;
const stoppers: BounceMailbox[] = [];
const clients: RawSmtp[] = [];
let port: number;

async function mailbox(limits: Partial<SmtpListenerLimits> = {}, lookups?: { n: number }) {
  const counted = lookups
    ? ({
        query: (...args: Parameters<pg.Pool['query']>) => {
          lookups.n += 1;
          return (pool.query as (...a: unknown[]) => unknown)(...args);
        },
      } as unknown as pg.Pool)
    : pool;
  const box = testMailbox(counted, log, {
    secret: SECRET,
    bounceDomain: BOUNCE_DOMAIN,
    limits: { ...DEFAULT_SMTP_LISTENER_LIMITS, ...limits },
  });
  stoppers.push(box);
  return { box, port: await box.start() };
}

const insertEmail = (id: string, to: string, cc: string[] = [], bcc: string[] = []) =>
  insertSentEmail(pool, T1, id, to, cc, bcc);

const logged = (emailId: string) => loggedEvents(pool, emailId);
const deliver = (to: string[], raw: string | Buffer, at = port) => deliverRaw(at, to, raw);
const dsn = (finalRecipient: string, action: string, status: string, diagnostic: string, id: string) =>
  dsnReport({ finalRecipient, action, status, diagnostic, id });

const arf = (originalMailFrom: string, originalRcptTo: string, id: string) =>
  [
    'From: fbl@isp.test',
    `Message-ID: <arf-${id}@isp.test>`,
    'Subject: complaint',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="F"',
    '',
    '--F',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'Version: 1',
    `Original-Mail-From: <${originalMailFrom}>`,
    `Original-Rcpt-To: <${originalRcptTo}>`,
    '',
    '--F--',
    '',
  ].join('\r\n');

beforeAll(async () => {
  db = await openLogDatabase({ pollIntervalMs: 50 });
  ({ pool, log } = db);
  ({ port } = await mailbox());
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.end();
  for (const box of stoppers) await box.stop();
  await db?.close();
});

describe('item 2: a report applies only to the recipient it proves', () => {
  it('a cc who read the whole-email VERP address cannot bounce the `to`: a DSN naming it is dropped', async () => {
    await insertEmail('em_victim1', 'victim@example.com', ['attacker@example.com']);
    const verp = verpAddress(SECRET, T1, 'em_victim1', BOUNCE_DOMAIN);
    const answer = await deliver(
      [verp],
      dsn('victim@example.com', 'failed', '5.1.1', '550 no such user', 'v1'),
    );
    expect(answer.ok).toBe(true);
    // Three soft bounces with fresh Message-IDs: nothing either.
    for (const id of ['s1', 's2', 's3'])
      await deliver([verp], dsn('victim@example.com', 'failed', '4.2.2', '452 full', id));
    expect(await logged('em_victim1')).toEqual([]);
  });

  it('the address of one copy (per recipient) applies to that recipient only', async () => {
    await insertEmail('em_victim2', 'victim@example.com', ['attacker@example.com']);
    const attackerCopy = verpAddress(SECRET, T1, 'em_victim2', BOUNCE_DOMAIN, 1);
    await deliver([attackerCopy], dsn('victim@example.com', 'failed', '5.1.1', '550 no', 'p1'));
    expect(await logged('em_victim2')).toEqual([]);
    await deliver([attackerCopy], dsn('attacker@example.com', 'failed', '5.1.1', '550 gone', 'p2'));
    const events = await logged('em_victim2');
    expect(events.map((e) => [e.type, (e.data as { recipient?: string }).recipient])).toEqual([
      ['email.bounced', 'attacker@example.com'],
    ]);
  });

  it('a complaint applies to the recipient it names, and only when the address proves it', async () => {
    await insertEmail('em_victim3', 'victim@example.com', ['attacker@example.com']);
    const attackerCopy = verpAddress(SECRET, T1, 'em_victim3', BOUNCE_DOMAIN, 1);
    // Naming the victim through the attacker's own copy: dropped.
    await deliver([`fbl@${BOUNCE_DOMAIN}`], arf(attackerCopy, 'victim@example.com', 'c1'));
    expect(await logged('em_victim3')).toEqual([]);
    await deliver([`fbl@${BOUNCE_DOMAIN}`], arf(attackerCopy, 'attacker@example.com', 'c2'));
    const events = await logged('em_victim3');
    expect(events.map((e) => [e.type, (e.data as { recipient?: string }).recipient])).toEqual([
      ['email.complained', 'attacker@example.com'],
    ]);
  });
});

describe('item 3: one reply whatever happens', () => {
  it('a report about a Bcc recipient and one about a stranger get the same answer', async () => {
    await insertEmail('em_bcc', 'to@example.com', [], ['hidden@example.com']);
    const hiddenCopy = verpAddress(SECRET, T1, 'em_bcc', BOUNCE_DOMAIN, 1);
    const about = await deliver([hiddenCopy], dsn('hidden@example.com', 'failed', '5.1.1', '550 x', 'b1'));
    // A report that is dropped: an address of an email nobody sent.
    const stranger = await deliver(
      [verpAddress(SECRET, T1, 'em_nobody', BOUNCE_DOMAIN)],
      dsn('stranger@example.com', 'failed', '5.1.1', '550 x', 'b2'),
    );
    expect((await logged('em_bcc')).map((e) => e.type)).toEqual(['email.bounced']);
    expect(about.response.replace(/\s+/g, ' ')).toBe(stranger.response.replace(/\s+/g, ' '));
  });
});

describe('item 11: a NUL in Diagnostic-Code', () => {
  it('is applied (250), stored without the NUL; never 451 forever', async () => {
    await insertEmail('em_nul', 'nul@example.com');
    const verp = verpAddress(SECRET, T1, 'em_nul', BOUNCE_DOMAIN);
    const answer = await deliver(
      [verp],
      dsn('nul@example.com', 'failed', '5.1.1', '550 bad\u0000user', 'n1'),
    );
    expect(answer, answer.response).toMatchObject({ ok: true });
    const [event] = await logged('em_nul');
    expect(event).toMatchObject({ type: 'email.bounced', data: { diagnostic: '550 baduser' } });
  });
});

async function connect(at: number): Promise<RawSmtp> {
  const c = await rawSmtp(at);
  clients.push(c);
  await c.replies(1);
  return c;
}

describe('items 6 and 7: RCPT floods and slot hoarding', () => {
  it('RCPTs are counted per connection (421 past the cap) and the bounce-host check is cached', async () => {
    const lookups = { n: 0 };
    const l = await mailbox({ maxRecipientsPerConnection: 200 }, lookups);
    const c = await connect(l.port);
    await c.command('EHLO flood.test');
    await c.command('MAIL FROM:<>');
    const before = lookups.n;
    // Pipelined, 300 RCPTs to 3 hosts nobody verified.
    c.socket.write(
      Array.from({ length: 300 }, (_, i) => `RCPT TO:<x${i}@nowhere${i % 3}.test>\r\n`).join(''),
    );
    await c.closed(30_000);
    const answers = c.lines.slice(2).filter((line) => /^\d{3} /.test(line));
    expect(answers.filter((a) => a.startsWith('550 '))).toHaveLength(200);
    expect(answers.at(-1)).toMatch(/^421 /);
    expect(lookups.n - before).toBeLessThanOrEqual(3);
  });

  it('one client gets at most maxConnectionsPerClient slots (20): the 21st is 421, a slow drip is closed at the deadline', async () => {
    const l = await mailbox({ sessionDeadlineMs: 2000 });
    const held = await Promise.all(Array.from({ length: 20 }, () => connect(l.port)));
    for (const c of held) expect(c.lines[0]).toMatch(/^220 /);
    const extra = await connect(l.port);
    expect(extra.lines[0]).toMatch(/^421 /);
    const drip = setInterval(() => {
      for (const c of held) if (c.closedAfterMs === null) c.socket.write('N');
    }, 200);
    try {
      for (const c of held) expect(await c.closed(15_000)).toBeLessThan(9000);
    } finally {
      clearInterval(drip);
    }
    await waitFor(() => (l.box.stats().connections === 0 ? true : null));
  });
});

describe('bounce mailbox fuzz (random, damaged, pipelined and slow sessions)', () => {
  const COMMANDS = [
    'EHLO fuzz.test',
    'HELO fuzz.test',
    'MAIL FROM:<>',
    `RCPT TO:<x@${BOUNCE_DOMAIN}>`,
    'RCPT TO:<x@nowhere.test>',
    `RCPT TO:<${verpAddress(SECRET, T1, 'em_fuzz', BOUNCE_DOMAIN)}>`,
    'DATA',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="B"',
    'Content-Type: message/delivery-status',
    'Final-Recipient: rfc822; fuzz@example.com',
    'Action: failed',
    'Status: 5.1.1',
    '--B',
    '.',
    'RSET',
    'NOOP',
    'AUTH PLAIN',
    'STARTTLS',
    'BDAT 5 LAST',
    'QUIT',
  ];
  const damaged = fc.oneof(
    fc.constantFrom(...COMMANDS),
    fc.string({ maxLength: 200 }),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
    fc.constantFrom(...COMMANDS).map((c) => `${c}\u0000x`),
    fc.nat({ max: 3000 }).map((n) => `RCPT TO:<${'a'.repeat(n)}@${BOUNCE_DOMAIN}>`),
  );
  const session = fc.record({
    lines: fc.array(damaged, { minLength: 1, maxLength: 14 }),
    pipelined: fc.boolean(),
    slow: fc.constantFrom(0, 0, 0, 1, 7),
    lineEnd: fc.constantFrom('\r\n', '\r\n', '\n'),
  });

  it('holds: well-formed replies only, no slot leaks, a genuine report still applies', async () => {
    await insertEmail('em_fuzz', 'fuzz@example.com');
    const l = await mailbox({ sessionDeadlineMs: 6000, idleTimeoutMs: 5000, maxConnectionsPerClient: 200 });
    await fc.assert(
      fc.asyncProperty(session, async ({ lines, pipelined, slow, lineEnd }) => {
        const c = await connect(l.port);
        const payload = lines.map((x) => `${x}${lineEnd}`);
        for (const w of pipelined ? [payload.join('')] : payload) {
          if (c.closedAfterMs !== null) break;
          if (slow > 0) {
            for (let i = 0; i < w.length && i < 120; i += slow) {
              c.socket.write(Buffer.from(w.slice(i, i + slow), 'latin1'));
              await new Promise((r) => setTimeout(r, 2));
            }
          } else c.socket.write(Buffer.from(w, 'latin1'));
        }
        await new Promise((r) => setTimeout(r, 30));
        c.end();
        for (const line of c.lines) expect(line).toMatch(/^[2-5]\d\d[ -]/);
      }),
      {
        numRuns: Number(process.env.FUZZ_SMTP_RUNS ?? 60),
        seed: Number(process.env.FUZZ_SEED ?? 20261201),
        interruptAfterTimeLimit: 60_000,
      },
    );
    await waitFor(() => (l.box.stats().connections === 0 ? true : null), { timeoutMs: 20_000 });
    const verp = verpAddress(SECRET, T1, 'em_fuzz', BOUNCE_DOMAIN);
    const answer = await deliver([verp], dsn('fuzz@example.com', 'failed', '5.1.1', '550 x', 'fz'), l.port);
    expect(answer.ok, answer.response).toBe(true);
    expect((await logged('em_fuzz')).some((e) => e.type === 'email.bounced')).toBe(true);
  }, 180_000);
});
