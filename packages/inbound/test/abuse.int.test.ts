// The inbound MX listener under abuse (issue 40: every SMTP listener behind the one guard of
// @tern/smtp-limits), over raw sockets → smtp-server, with real Postgres and the Postgres-table
// event log: the 21st connection of one client is 421, a byte-drip session is closed at the
// session deadline however often bytes arrive, the 101st RCPT of a message is 452.
import { createKeyring } from '@tern/privacy';
import { DEFAULT_SMTP_LISTENER_LIMITS, type SmtpListenerLimits } from '@tern/smtp-limits';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { waitFor } from '../../../test/support/services.js';
import { type RawSmtp, rawSmtp } from '../../../test/support/smtp-raw.js';
import { ensureInboundAddress, type InboundListener } from '../src/index.js';
import { createTestListener, INBOUND_DOMAIN } from './listener-support.js';

const T1 = 'abuse-acme';

let db: LogDatabase;
const listeners: InboundListener[] = [];
const clients: RawSmtp[] = [];

async function listen(limits: Partial<SmtpListenerLimits> = {}) {
  const { pool } = db;
  const keyring = createKeyring({ pool, encryptionKey: 'inbound-abuse-encryption-key-0123456789abcdef' });
  const listener = createTestListener(db, keyring, {
    limits: { ...DEFAULT_SMTP_LISTENER_LIMITS, ...limits },
  });
  listeners.push(listener);
  return { listener, port: await listener.start() };
}

async function connect(port: number): Promise<RawSmtp> {
  const c = await rawSmtp(port);
  clients.push(c);
  await c.replies(1);
  return c;
}

beforeAll(async () => {
  db = await openLogDatabase({ pollIntervalMs: 50 });
  await ensureInboundAddress(db.pool, T1);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.end();
  for (const l of listeners) await l.stop();
  await db?.close();
});

describe('the inbound listener behind the shared SMTP guard', () => {
  it('one client gets at most 20 connections: the 21st is 421; a byte drip is closed at the session deadline', async () => {
    const l = await listen({ sessionDeadlineMs: 2000 });
    const held = await Promise.all(Array.from({ length: 20 }, () => connect(l.port)));
    for (const c of held) expect(c.lines[0]).toMatch(/^220 /);
    expect(l.listener.stats()).toEqual({ connections: 20, clients: 1 });
    const extra = await connect(l.port);
    expect(extra.lines[0]).toMatch(/^421 /);
    expect(await extra.closed(5000)).toBeGreaterThanOrEqual(0);
    // One byte every 200 ms: the idle timeout (60 s) never fires, the session deadline (2 s) does.
    const drip = setInterval(() => {
      for (const c of held) if (c.closedAfterMs === null) c.socket.write('N');
    }, 200);
    try {
      for (const c of held) {
        const after = await c.closed(15_000);
        expect(after).toBeGreaterThanOrEqual(1900);
        expect(after).toBeLessThan(9000);
      }
    } finally {
      clearInterval(drip);
    }
    expect(held.every((c) => c.lines.some((line) => line.startsWith('421 ')))).toBe(true);
    await waitFor(() => (l.listener.stats().connections === 0 ? true : null));
    // The slots are free again: a new connection is greeted.
    expect((await connect(l.port)).lines[0]).toMatch(/^220 /);
  });

  it('100 recipients per message: the 101st RCPT is 452, and the message still goes with 100', async () => {
    const l = await listen();
    const c = await connect(l.port);
    await c.command('EHLO flood.test');
    expect(await c.command('MAIL FROM:<someone@sender.test>')).toMatch(/^250 /);
    const answers: (string | null)[] = [];
    for (let i = 0; i < 101; i++) answers.push(await c.command(`RCPT TO:<r${i}@${T1}.${INBOUND_DOMAIN}>`));
    expect(answers.slice(0, 100).every((a) => a?.startsWith('250 '))).toBe(true);
    expect(answers[100]).toMatch(/^452 4\.5\.3 /);
    // Not closed: the client sends the message to the 100 it has.
    expect(await c.command('DATA')).toMatch(/^354 /);
    const reply = await c.command(
      [
        'From: someone@sender.test',
        `To: r0@${T1}.${INBOUND_DOMAIN}`,
        'Subject: many',
        'Message-ID: <abuse-many@sender.test>',
        '',
        'Body.',
        '.',
      ].join('\r\n'),
      30_000,
    );
    expect(reply).toMatch(/^250 .*inb_/);
    const id = /inb_\S+/.exec(reply ?? '')![0];
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT cardinality(to_hashes) AS n FROM inbound_messages WHERE id = $1',
      [id],
    );
    expect(rows[0]?.n).toBe(100);
  });
});
