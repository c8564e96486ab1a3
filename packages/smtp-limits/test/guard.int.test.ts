import tls from 'node:tls';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/services.js';
import { type RawSmtp, rawSmtp } from '../../../test/support/smtp-raw.js';
import {
  createSmtpGuard,
  DEFAULT_SMTP_LISTENER_LIMITS,
  type GuardEvent,
  type SmtpGuard,
  type SmtpListenerLimits,
  smtpReply,
} from '../src/index.js';

const open: { server: SMTPServer; clients: RawSmtp[] }[] = [];

/** A real smtp-server behind the guard; AUTH PLAIN accepts the password `good`. */
async function listener(over: Partial<SmtpListenerLimits>, requiresAuth = false, starttls = false) {
  const limits = { ...DEFAULT_SMTP_LISTENER_LIMITS, ...over };
  const events: GuardEvent[] = [];
  const guard: SmtpGuard = createSmtpGuard({
    limits,
    requiresAuth,
    name: 'test',
    onEvent: (e) => events.push(e),
  });
  const server = new SMTPServer({
    ...guard.serverOptions,
    authOptional: !requiresAuth,
    allowInsecureAuth: true,
    disabledCommands: starttls ? [] : ['STARTTLS'],
    disableReverseLookup: true,
    logger: false,
    onAuth(auth, session, callback) {
      if (auth.password === 'good') {
        guard.authSucceeded(session);
        callback(null, { user: 'u' });
      } else callback(guard.authFailed(session, smtpReply(535, '5.7.8 Authentication failed')));
    },
    onMailFrom(_address, session, callback) {
      callback(guard.message(session) ?? undefined);
    },
    onRcptTo(_address, session, callback) {
      callback(guard.recipient(session) ?? undefined);
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => callback());
    },
  });
  guard.attach(server);
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  const entry = { server, clients: [] as RawSmtp[] };
  open.push(entry);
  const connect = async () => {
    const c = await rawSmtp(port);
    entry.clients.push(c);
    await c.replies(1);
    return c;
  };
  return { port, guard, events, connect };
}

afterEach(async () => {
  for (const { server, clients } of open.splice(0)) {
    for (const c of clients) c.end();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const plain = (password: string) => `AUTH PLAIN ${Buffer.from(`\0user\0${password}`).toString('base64')}`;

describe('createSmtpGuard over real sockets', () => {
  it('caps connections per client address: the one past the cap gets 421 and is closed', async () => {
    const l = await listener({ maxConnectionsPerClient: 3 });
    const held = [await l.connect(), await l.connect(), await l.connect()];
    for (const c of held) expect(c.lines[0]).toMatch(/^220 /);
    const extra = await l.connect();
    expect(extra.lines[0]).toMatch(/^421 4\.7\.0 .*Too many connections from your address/);
    await extra.closed();
    expect(l.guard.stats()).toEqual({ connections: 3, clients: 1 });
    // A slot comes back once one of them leaves.
    held[0]!.end();
    await waitFor(() => (l.guard.stats().connections === 2 ? true : null));
    expect((await l.connect()).lines[0]).toMatch(/^220 /);
  });

  it("frees the slot of a connection that closes after STARTTLS (smtp-server drops the plain socket's listeners)", async () => {
    const l = await listener({ maxConnectionsPerClient: 2 }, false, true);
    for (let round = 0; round < 3; round++) {
      const c = await l.connect();
      await c.command('EHLO a');
      expect(await c.command('STARTTLS')).toMatch(/^220 /);
      const secure = tls.connect({ socket: c.socket, rejectUnauthorized: false });
      await new Promise<void>((resolve, reject) =>
        secure.once('secureConnect', resolve).once('error', reject),
      );
      secure.destroy();
      await waitFor(() => (l.guard.stats().connections === 0 ? true : null), { timeoutMs: 10_000 });
    }
    expect((await l.connect()).lines[0]).toMatch(/^220 /);
  });

  it('caps connections in total', async () => {
    const l = await listener({ maxConnections: 2 });
    await l.connect();
    await l.connect();
    const extra = await l.connect();
    expect(extra.lines[0]).toMatch(/^421 4\.7\.0 .*Too many connections, try again later/);
    expect(l.events).toContain('too_many_connections');
  });

  it('closes a session at its deadline however slowly bytes keep arriving', async () => {
    const l = await listener({ sessionDeadlineMs: 1500, idleTimeoutMs: 60_000 });
    const c = await l.connect();
    // One byte every 100 ms: the idle timeout never fires, the deadline does.
    const drip = setInterval(() => c.socket.write('N'), 100);
    try {
      const after = await c.closed(10_000);
      expect(after).toBeGreaterThanOrEqual(1400);
      expect(after).toBeLessThan(6000);
      expect(c.lines.some((l) => /^421 .*Session time limit/.test(l))).toBe(true);
      expect(l.events).toContain('session_deadline');
    } finally {
      clearInterval(drip);
    }
  });

  it('on a listener requiring AUTH, closes an unauthenticated session at the AUTH deadline, not an authenticated one', async () => {
    const l = await listener({ authDeadlineMs: 1000, sessionDeadlineMs: 60_000 }, true);
    const idle = await l.connect();
    const authed = await l.connect();
    await authed.command('EHLO a');
    expect(await authed.command(plain('good'))).toMatch(/^235 /);
    await idle.closed(10_000);
    expect(idle.lines.some((l) => /^421 .*Authentication time limit/.test(l))).toBe(true);
    await new Promise((r) => setTimeout(r, 800));
    expect(authed.closedAfterMs).toBeNull();
    expect(await authed.command('NOOP')).toMatch(/^250 /);
  });

  it('closes a connection after maxAuthFailures failed AUTHs', async () => {
    const l = await listener({ maxAuthFailures: 3 }, true);
    const c = await l.connect();
    await c.command('EHLO a');
    expect(await c.command(plain('bad1'))).toMatch(/^535 /);
    expect(await c.command(plain('bad2'))).toMatch(/^535 /);
    expect(await c.command(plain('bad3'))).toMatch(/^421 .*Too many failed authentication/);
    await c.closed();
    expect(l.events).toEqual(['auth_failures']);
  });

  it('caps recipients per message (452), per connection (421) and per client per minute (421)', async () => {
    const l = await listener({
      maxRecipientsPerMessage: 2,
      maxRecipientsPerConnection: 5,
      recipientsPerMinute: 1000,
    });
    const c = await l.connect();
    await c.command('EHLO a');
    expect(await c.command('MAIL FROM:<a@x.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<1@x.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<2@x.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<3@x.test>')).toMatch(/^452 4\.5\.3 /);
    expect(await c.command('RSET')).toMatch(/^250 /);
    expect(await c.command('MAIL FROM:<a@x.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<4@x.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<5@x.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<6@x.test>')).toMatch(/^421 /);
    await c.closed();

    const m = await listener({ recipientsPerMinute: 3 });
    const d = await m.connect();
    await d.command('EHLO a');
    await d.command('MAIL FROM:<a@x.test>');
    for (const n of [1, 2, 3]) expect(await d.command(`RCPT TO:<${n}@x.test>`)).toMatch(/^250 /);
    expect(await d.command('RCPT TO:<4@x.test>')).toMatch(/^421 4\.7\.0 .*recipients from your address/);
    // The client is over its rate: a new connection is refused at once.
    const again = await m.connect();
    expect(again.lines[0]).toMatch(/^421 /);
  });

  it('caps messages per client per minute', async () => {
    const l = await listener({ messagesPerMinute: 2 });
    const c = await l.connect();
    await c.command('EHLO a');
    for (let i = 0; i < 2; i++) {
      expect(await c.command('MAIL FROM:<a@x.test>')).toMatch(/^250 /);
      await c.command('RSET');
    }
    expect(await c.command('MAIL FROM:<a@x.test>')).toMatch(/^421 4\.7\.0 /);
  });

  it('a refused connection costs nothing lasting: 2 000 over the cap leave the count at the cap', async () => {
    const l = await listener({ maxConnectionsPerClient: 5 });
    for (let i = 0; i < 5; i++) await l.connect();
    // In waves of 200 (a wave larger than the listen backlog only measures the kernel's SYN retries).
    const refused: string[] = [];
    for (let wave = 0; wave < 10; wave++) {
      refused.push(
        ...(await Promise.all(
          Array.from({ length: 200 }, async () => {
            const c = await rawSmtp(l.port);
            await c.closed(20_000);
            return c.lines[0] ?? '';
          }),
        )),
      );
    }
    expect(refused.every((line) => line.startsWith('421 '))).toBe(true);
    expect(l.guard.stats()).toEqual({ connections: 5, clients: 1 });
  });
});
