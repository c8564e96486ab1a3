// Issue 40, item 2, end to end over real sockets: the sender (nodemailer, pooled) sends one
// envelope per recipient to a real SMTP server (smtp-server), each with its own VERP envelope
// sender; a DSN mailed (nodemailer) to one of those addresses through the bounce mailbox
// (services/bounce, smtp-server) bounces exactly that recipient. Real Postgres, Postgres-table log.
import { queuedEvent } from '@tern/domain';
import { createEventStream, type PostgresEventLog } from '@tern/event-log';
import { isSuppressed } from '@tern/read-models';
import { verpAddress } from '@tern/sending-domains';
import { DEFAULT_SMTP_LISTENER_LIMITS } from '@tern/smtp-limits';
import { getTemplate } from '@tern/templates';
import { simpleParser } from 'mailparser';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverRaw, dsnReport, loggedEvents } from '../../../test/support/bounce-mail.js';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { waitFor } from '../../../test/support/services.js';
import { type SmtpSink, startSmtpSink } from '../../../test/support/smtp-sink.js';
import type { BounceMailbox } from '../../bounce/src/index.js';
import { testMailbox } from '../../bounce/test/test-mailbox.js';
import { createSender, createSmtpProvider, type Sender } from '../src/index.js';

const TENANT = 'verp-tenant';
const SECRET = 'verp-per-recipient-secret-0123456789';
const BOUNCE_DOMAIN = 'bounces.tern.test';

let db: LogDatabase;
let pool: pg.Pool;
let log: PostgresEventLog;
let sink: SmtpSink;
let sender: Sender;
let mailbox: BounceMailbox;
let mailboxPort: number;

const events = (id: string) => loggedEvents(pool, id);

const dsn = (finalRecipient: string, id: string) =>
  dsnReport({ finalRecipient, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 no such user', id });

async function deliverToMailbox(to: string, raw: string): Promise<void> {
  const answer = await deliverRaw(mailboxPort, [to], raw);
  if (!answer.ok) throw new Error(`the mailbox refused: ${answer.response}`);
}

beforeAll(async () => {
  db = await openLogDatabase({ pollIntervalMs: 50 });
  ({ pool, log } = db);
  sink = await startSmtpSink({ hideDSN: false });
  sender = createSender({
    pool,
    log: createEventStream(log),
    provider: createSmtpProvider({
      url: sink.url,
      timeoutMs: 5000,
      pool: { maxConnections: 2, maxMessages: 50 },
    }),
    isSuppressed,
    getTemplate,
    tracking: { secret: SECRET, publicUrl: 'http://127.0.0.1:3000' },
    messageIdDomain: 'tern.test',
    bounceDomain: BOUNCE_DOMAIN,
    pollIntervalMs: 50,
    retryDelaysMs: [100, 150, 200, 250, 300],
  });
  await sender.start();
  mailbox = testMailbox(pool, log, {
    secret: SECRET,
    bounceDomain: BOUNCE_DOMAIN,
    limits: DEFAULT_SMTP_LISTENER_LIMITS,
  });
  mailboxPort = await mailbox.start();
}, 60_000);

afterAll(async () => {
  await sender?.stop();
  await mailbox?.stop();
  await sink?.close();
  await db?.close();
});

describe('one envelope per recipient, each with its own VERP address (issue 40, item 2)', () => {
  it('to + cc + bcc: three envelopes, the same bytes, Bcc in no header; a DSN to the cc copy bounces the cc only', async () => {
    const id = `em_verp_${Date.now()}`;
    // A suppressed cc leaves the envelope but keeps its place in the stored one: the indexes below
    // are those of the stored email (to, cc, bcc), the order the bounce mailbox resolves.
    await pool.query(
      `INSERT INTO suppressions (tenant_id, email, reason, source) VALUES ($1, 'gone@example.com', 'manual', 'manual')
       ON CONFLICT DO NOTHING`,
      [TENANT],
    );
    const to = ['Ann <ann@example.com>'];
    const cc = ['gone@example.com', 'bob@example.com'];
    const bcc = ['carol@example.com'];
    await pool.query(
      `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message) VALUES ($1, $2, 'awaiting_log', now(), $3)`,
      [TENANT, id, JSON.stringify({ from: 'hello@acme.test', to, cc, bcc, subject: 'S', text: 'T' })],
    );
    await createEventStream(log).append([
      queuedEvent({
        tenantId: TENANT,
        emailId: id,
        at: new Date(),
        toEmail: 'ann@example.com',
        subject: 'S',
      }),
    ]);
    await waitFor(async () => ((await events(id)).some((e) => e.type === 'email.sent') ? true : null), {
      timeoutMs: 30_000,
      description: `${id} sent`,
    });

    const copies = sink.received.filter((r) => r.raw.includes(id));
    const byRecipient = new Map(copies.map((c) => [c.rcptTo.join(','), c]));
    expect(copies).toHaveLength(3);
    const expected: [string, number][] = [
      ['ann@example.com', 0],
      ['bob@example.com', 2],
      ['carol@example.com', 3],
    ];
    for (const [address, index] of expected) {
      const copy = byRecipient.get(address);
      expect(copy, address).toBeDefined();
      expect(copy!.mailFrom).toBe(verpAddress(SECRET, TENANT, id, BOUNCE_DOMAIN, index));
      expect(copy!.mailDsn).toMatchObject({ ret: 'HDRS', envid: id });
    }
    // The same message to each: identical bytes, Bcc in no header, the suppressed cc nowhere.
    expect(new Set(copies.map((c) => c.raw)).size).toBe(1);
    const parsed = await simpleParser(copies[0]!.raw);
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(copies[0]!.raw).not.toMatch(/carol@|gone@/i);

    // The relay's DSN about bob, to bob's copy's envelope sender: bob bounces, nobody else.
    const before = (await events(id)).length;
    await deliverToMailbox(byRecipient.get('bob@example.com')!.mailFrom, dsn('bob@example.com', id));
    const bounced = await waitFor(
      async () => {
        const all = await events(id);
        return all.length > before ? all.slice(before) : null;
      },
      { timeoutMs: 20_000, description: `${id} bounced` },
    );
    expect(
      bounced.map((e) => [e.type, (e.data as { recipient?: string; bounceType?: string }).recipient]),
    ).toEqual([['email.bounced', 'bob@example.com']]);
    expect(bounced[0]!.data).toMatchObject({ bounceType: 'hard' });

    // A DSN about ann mailed to bob's copy's address proves nothing about ann: dropped.
    await deliverToMailbox(byRecipient.get('bob@example.com')!.mailFrom, dsn('ann@example.com', `${id}-x`));
    // Ann's own copy's address bounces ann (the listener answered before: nothing more was appended).
    expect((await events(id)).length).toBe(before + 1);
    await deliverToMailbox(byRecipient.get('ann@example.com')!.mailFrom, dsn('ann@example.com', `${id}-a`));
    const ann = await waitFor(
      async () => {
        const all = await events(id);
        return all.length > before + 1 ? all.slice(before + 1) : null;
      },
      { timeoutMs: 20_000, description: `${id} ann bounced` },
    );
    expect(ann.map((e) => [e.type, (e.data as { recipient?: string }).recipient])).toEqual([
      ['email.bounced', 'ann@example.com'],
    ]);
  });
});
