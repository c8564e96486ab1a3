// SMTP submission under abuse (issue 40, items 1 and the fuzz of "Also keep"), over real sockets:
// the shared guard of @tern/smtp-limits caps connections per client and in total, closes a session
// that does not authenticate in time however slowly it trickles bytes, closes a connection after
// 3 failed AUTHs, and random, damaged, pipelined and slow sessions never take it down.
import { DEFAULT_SMTP_LISTENER_LIMITS, type SmtpListenerLimits } from '@tern/smtp-limits';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import { type RawSmtp, rawSmtp } from '../../../../test/support/smtp-raw.js';
import { type SubmissionServer, selfSignedPair, type TlsPair } from '../../src/index.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { createKey, jwtFor, suffix } from '../support.js';
import { startLoopbackSubmission } from './session.js';

let world: SendingWorld;
let tls: TlsPair;
const run = suffix();
const A = `smtp-abuse-${run}`;
let sendKey: string;
const closers: (() => Promise<unknown>)[] = [];
const clients: RawSmtp[] = [];

async function start(limits: Partial<SmtpListenerLimits> = {}): Promise<SubmissionServer> {
  const server = await startLoopbackSubmission(world.app, tls, {
    limits: { ...DEFAULT_SMTP_LISTENER_LIMITS, ...limits },
  });
  closers.push(() => server.close());
  return server;
}

async function connect(port: number): Promise<RawSmtp> {
  const c = await rawSmtp(port);
  clients.push(c);
  await c.replies(1);
  return c;
}

const plain = (password: string) => `AUTH PLAIN ${Buffer.from(`\0apikey\0${password}`).toString('base64')}`;

const outgoingCount = async () =>
  Number(
    (await world.stores.pool.query('SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1', [A]))
      .rows[0].n,
  );

/** One well-formed submission on a raw socket: its final reply to DATA. */
async function submitOnce(port: number): Promise<string | null> {
  const c = await connect(port);
  await c.command('EHLO fine.test');
  expect(await c.command(plain(sendKey))).toMatch(/^235 /);
  expect(await c.command('MAIL FROM:<hello@acme.test>')).toMatch(/^250 /);
  expect(await c.command('RCPT TO:<delivered@sandbox.test>')).toMatch(/^250 /);
  expect(await c.command('DATA')).toMatch(/^354 /);
  const reply = await c.command(
    'From: hello@acme.test\r\nTo: delivered@sandbox.test\r\nSubject: still up\r\n\r\nfine\r\n.',
    30_000,
  );
  c.end();
  return reply;
}

beforeAll(async () => {
  [world, tls] = await Promise.all([openSendingWorld(), selfSignedPair('localhost')]);
  sendKey = (await createKey(world.app, jwtFor(wallClock, A), A, { scopes: ['email:send'] })).key;
}, 120_000);

afterAll(async () => {
  for (const c of clients) c.end();
  for (const close of closers.splice(0).reverse()) await close();
  await world?.close();
});

describe('SMTP submission: connection limits and deadlines (issue 40, item 1)', () => {
  it('one client address gets at most maxConnectionsPerClient connections; the next is 421 and closed', async () => {
    const server = await start({ maxConnectionsPerClient: 5 });
    const held = await Promise.all(Array.from({ length: 5 }, () => connect(server.port)));
    for (const c of held) expect(c.lines[0]).toMatch(/^220 /);
    const extra = await connect(server.port);
    expect(extra.lines[0]).toMatch(/^421 4\.7\.0 .*Too many connections from your address/);
    await extra.closed();
    expect(server.stats()).toEqual({ connections: 5, clients: 1 });
    for (const c of held) c.end();
    await waitFor(() => (server.stats().connections === 0 ? true : null));
  });

  it('caps connections in total', async () => {
    const server = await start({ maxConnections: 3 });
    await Promise.all(Array.from({ length: 3 }, () => connect(server.port)));
    const extra = await connect(server.port);
    expect(extra.lines[0]).toMatch(/^421 4\.7\.0 .*Too many connections/);
  });

  it('a client dripping one byte every 200 ms before AUTH is closed at the AUTH deadline', async () => {
    const server = await start({ authDeadlineMs: 1500, idleTimeoutMs: 60_000 });
    const c = await connect(server.port);
    const drip = setInterval(() => c.socket.write('E'), 200);
    try {
      const after = await c.closed(15_000);
      expect(after).toBeGreaterThanOrEqual(1400);
      expect(after).toBeLessThan(8000);
      expect(c.lines.some((l) => /^421 .*Authentication time limit/.test(l))).toBe(true);
    } finally {
      clearInterval(drip);
    }
  });

  it('an authenticated session outlives the AUTH deadline and submits', async () => {
    const server = await start({ authDeadlineMs: 1000 });
    const c = await connect(server.port);
    await c.command('EHLO fine.test');
    expect(await c.command(plain(sendKey))).toMatch(/^235 /);
    await new Promise((r) => setTimeout(r, 1500));
    expect(c.closedAfterMs).toBeNull();
    expect(await c.command('NOOP')).toMatch(/^250 /);
  });

  it('the third failed AUTH closes the connection (421): no fourth key check on it', async () => {
    const server = await start();
    const c = await connect(server.port);
    await c.command('EHLO guesser.test');
    const answers: (string | null)[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await c.command(plain(`tern_wrong_${i}_${run}`));
      if (answer === null) break;
      answers.push(answer);
      if (answer.startsWith('421 ')) break;
    }
    expect(answers.slice(0, 2).every((a) => a?.startsWith('535 '))).toBe(true);
    expect(answers[2]).toMatch(/^421 4\.7\.0 Too many failed authentication attempts/);
    expect(answers).toHaveLength(3);
    await c.closed();
    // Nothing more is read on it: a fourth AUTH gets no answer.
    expect(await c.command(plain('tern_wrong_again'), 2000).catch(() => null)).toBeNull();
  });
});

describe('SMTP submission fuzz (random, damaged, pipelined and slow sessions)', () => {
  const COMMANDS = [
    'EHLO fuzz.test',
    'HELO fuzz.test',
    'MAIL FROM:<hello@acme.test>',
    'MAIL FROM:<>',
    'RCPT TO:<delivered@sandbox.test>',
    'RCPT TO:<a@b>',
    'DATA',
    'RSET',
    'NOOP',
    'VRFY root',
    'STARTTLS',
    'AUTH PLAIN',
    'AUTH LOGIN',
    'AUTH PLAIN AGFwaWtleQB3cm9uZw==',
    'AUTH CRAM-MD5',
    'BDAT 10 LAST',
    'GET / HTTP/1.1',
    '.',
    'QUIT',
  ];
  const damaged = fc.oneof(
    fc.constantFrom(...COMMANDS),
    fc.string({ maxLength: 200 }),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
    fc.constantFrom(...COMMANDS).map((c) => `${c}\u0000${'x'.repeat(20)}`),
    fc.constantFrom(...COMMANDS).map((c) => c.slice(0, Math.max(1, c.length - 3))),
    fc.nat({ max: 4000 }).map((n) => `MAIL FROM:<${'a'.repeat(n)}@x.test>`),
  );
  const session = fc.record({
    lines: fc.array(damaged, { minLength: 1, maxLength: 12 }),
    /** Pipelined (one write) or one write per line. */
    pipelined: fc.boolean(),
    /** Bytes per write when slow (0: not slow). */
    slow: fc.constantFrom(0, 0, 0, 1, 7),
    lineEnd: fc.constantFrom('\r\n', '\r\n', '\n', '\r'),
  });

  it('holds: every reply is a well-formed SMTP line, nothing is queued without AUTH, no connection leaks, and a real session still works', async () => {
    // Short deadlines: every connection the fuzz leaves behind must be gone within them.
    const server = await start({
      authDeadlineMs: 4000,
      sessionDeadlineMs: 8000,
      idleTimeoutMs: 5000,
      maxConnectionsPerClient: 200,
    });
    const before = await outgoingCount();
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(session, async ({ lines, pipelined, slow, lineEnd }) => {
        const c = await connect(server.port);
        const payload = lines.map((l) => `${l}${lineEnd}`);
        const writes = pipelined ? [payload.join('')] : payload;
        for (const w of writes) {
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
    expect(Date.now() - started).toBeLessThan(120_000);
    expect(await outgoingCount()).toBe(before);
    await waitFor(() => (server.stats().connections === 0 ? true : null), { timeoutMs: 20_000 });
    expect(await submitOnce(server.port)).toMatch(/^250 .*queued as em_/);
    expect(await outgoingCount()).toBe(before + 1);
  }, 180_000);

  it('a pipelined session (EHLO … DATA in one write) is answered in order', async () => {
    const server = await start();
    const c = await connect(server.port);
    c.socket.write(
      `EHLO pipe.test\r\n${plain(sendKey)}\r\nMAIL FROM:<hello@acme.test>\r\nRCPT TO:<delivered@sandbox.test>\r\nDATA\r\n`,
    );
    const lines = await c.replies(6, 20_000);
    const finals = lines.filter((l) => /^\d{3} /.test(l)).map((l) => l.slice(0, 3));
    expect(finals).toEqual(['220', '250', '235', '250', '250', '354']);
  });
});
