import net from 'node:net';
import { EventLogUnavailableError, type EventStream } from '@tern/event-log';
import { DEFAULT_SMTP_LISTENER_LIMITS, type SmtpListenerLimits } from '@tern/smtp-limits';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import { type RawSmtp, rawSmtp } from '../../../../test/support/smtp-raw.js';
import {
  type ApiKeyStore,
  createApiKeyStore,
  createContentBudget,
  type SubmissionServer,
  selfSignedPair,
  type TlsPair,
} from '../../src/index.js';
import {
  getEmail,
  openSendingWorld,
  type SendingWorld,
  waitForStatus,
  wallClock,
} from '../sending-support.js';
import { bearer, buildApp, closeAll, createKey, createProject, jwtFor, suffix } from '../support.js';
import { startLoopbackSubmission, startTlsSubmission, submissionClient, swaks } from './session.js';

// SMTP submission (SPEC §22) with real clients nobody here wrote: nodemailer and swaks (Debian),
// over STARTTLS with AUTH, into the real send path (Postgres, the event log, the projector, the
// sender with the sandbox provider).
describe('SMTP submission', () => {
  let world: SendingWorld;
  let tls: TlsPair;
  let submission: SubmissionServer;
  const run = suffix();
  const A = `smtp-a-${run}`;
  let ownerA: string;
  let sendKey: string;
  let readKey: string;
  const closers: (() => Promise<unknown>)[] = [];

  const FROM = 'Acme <hello@acme.test>';

  const transport = (port: number, pass: string, over?: SMTPTransport.Options) =>
    submissionClient(port, tls, pass, over);

  const outgoingCount = async () =>
    Number(
      (await world.stores.pool.query('SELECT count(*) AS n FROM outgoing_emails WHERE tenant_id = $1', [A]))
        .rows[0].n,
    );

  const queuedId = (response: string) => {
    const m = /queued as (em_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20})/.exec(response);
    if (!m) throw new Error(`no email id in ${response}`);
    return m[1]!;
  };

  async function content(id: string) {
    const res = await world.app.inject({ url: `/emails/${id}/content`, headers: bearer(readKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as {
      to: string;
      cc: string[];
      bcc: string[];
      subject: string;
      html: string | null;
      text: string | null;
      from: string;
      replyTo: string | null;
      headers: Record<string, string>;
    };
  }

  async function start(over: Parameters<typeof startLoopbackSubmission>[2] = {}) {
    const server = await startLoopbackSubmission(world.app, tls, over);
    closers.push(() => server.close());
    return server;
  }

  beforeAll(async () => {
    [world, tls] = await Promise.all([openSendingWorld(), selfSignedPair('localhost')]);
    ownerA = jwtFor(wallClock, A);
    sendKey = (await createKey(world.app, ownerA, A, { scopes: ['email:send'] })).key;
    readKey = (await createKey(world.app, ownerA, A, { scopes: ['email:read'] })).key;
    submission = await start({ requireTls: true });
  }, 120_000);

  afterAll(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await world?.close();
  });

  describe('SMTP submission with nodemailer (STARTTLS, AUTH)', () => {
    it('AUTH PLAIN: queued through the send path, 250 names the email id, the sandbox delivers it', async () => {
      const before = await outgoingCount();
      const info = await transport(submission.port, sendKey, { authMethod: 'PLAIN' }).sendMail({
        from: FROM,
        to: 'delivered@sandbox.test',
        cc: 'cc@example.com',
        bcc: 'hidden@example.com',
        replyTo: 'support@acme.test',
        subject: 'Invoice ready',
        text: 'Your invoice is ready',
        html: '<p>Your <b>invoice</b> is ready</p>',
        headers: {
          'X-Tern-Tags': 'invoice, billing',
          'X-Campaign': 'c-42',
          'List-Unsubscribe': '<mailto:unsub@acme.test>',
        },
      });
      expect(info.response).toMatch(/^250 2\.0\.0 OK: queued as em_/);
      const id = queuedId(info.response);
      expect(await outgoingCount()).toBe(before + 1);
      const email = await waitForStatus(world.app, readKey, id, 'DELIVERED', ['email.delivered']);
      expect(email).toMatchObject({
        toEmail: 'delivered@sandbox.test',
        subject: 'Invoice ready',
        from: FROM,
        cc: ['cc@example.com'],
        bcc: ['hidden@example.com'],
        tags: ['invoice', 'billing'],
      });
      const kept = await content(id);
      expect(kept.text).toBe('Your invoice is ready');
      expect(kept.html).toContain('<p>Your <b>invoice</b> is ready</p>');
      expect(kept.replyTo).toBe('support@acme.test');
      expect(kept.headers).toMatchObject({
        'x-campaign': 'c-42',
        'list-unsubscribe': '<mailto:unsub@acme.test>',
      });
      // Tern's steering headers are read and removed.
      expect(Object.keys(kept.headers).map((h) => h.toLowerCase())).not.toContain('x-tern-tags');
    });

    it('several To recipients, a cc and a bcc: one message, one email id, each recipient its own outcome (SPEC §22)', async () => {
      const before = await outgoingCount();
      const info = await transport(submission.port, sendKey).sendMail({
        from: FROM,
        to: ['delivered@sandbox.test', 'bounced@sandbox.test'],
        cc: 'cc@sandbox.test',
        bcc: 'hidden@sandbox.test',
        subject: 'To two',
        text: 'to two people',
      });
      const id = queuedId(info.response);
      expect(await outgoingCount()).toBe(before + 1);
      const email = await waitForStatus(world.app, readKey, id, 'BOUNCED', [
        'email.delivered',
        'email.bounced',
      ]);
      expect(email.toEmail).toBe('delivered@sandbox.test');
      expect(email.to).toEqual(['delivered@sandbox.test', 'bounced@sandbox.test']);
      expect(email.bcc).toEqual(['hidden@sandbox.test']);
      const outcome = Object.fromEntries(email.recipients.map((r) => [r.email, r.status]));
      expect(outcome).toEqual({
        'delivered@sandbox.test': 'DELIVERED',
        'bounced@sandbox.test': 'BOUNCED',
        'cc@sandbox.test': 'DELIVERED',
        'hidden@sandbox.test': 'DELIVERED',
      });
    });

    it('AUTH LOGIN works the same; the Message-ID is the idempotency key (a resend queues nothing)', async () => {
      const message = {
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'Once',
        text: 'only once',
        messageId: `<once-${run}@acme.test>`,
      };
      const before = await outgoingCount();
      const first = await transport(submission.port, sendKey, { authMethod: 'LOGIN' }).sendMail(message);
      const again = await transport(submission.port, sendKey, { authMethod: 'LOGIN' }).sendMail(message);
      expect(queuedId(again.response)).toBe(queuedId(first.response));
      expect(await outgoingCount()).toBe(before + 1);
    });

    it('a key without email:send, or a wrong password → 535; an unauthenticated MAIL → 530', async () => {
      await expect(
        transport(submission.port, readKey).sendMail({ from: FROM, to: 'a@b.test', text: 'x' }),
      ).rejects.toMatchObject({ responseCode: 535 });
      await expect(
        transport(submission.port, 'tern_live_wrong', {}).sendMail({ from: FROM, to: 'a@b.test', text: 'x' }),
      ).rejects.toMatchObject({ responseCode: 535 });
      const anonymous = submissionClient(submission.port, tls);
      await expect(anonymous.sendMail({ from: FROM, to: 'a@b.test', text: 'x' })).rejects.toMatchObject({
        responseCode: 530,
      });
    });

    it('production: no AUTH without TLS (refused, nothing queued)', async () => {
      const before = await outgoingCount();
      const plain = transport(submission.port, sendKey, { requireTLS: false, ignoreTLS: true });
      await expect(
        plain.sendMail({ from: FROM, to: 'delivered@sandbox.test', subject: 's', text: 'x' }),
      ).rejects.toMatchObject({
        responseCode: 538,
      });
      expect(await outgoingCount()).toBe(before);
    });

    it('a key bound to a project sends into its project; another project in X-Tern-Project-Id → 550', async () => {
      const projectId = await createProject(world.app, ownerA, `p-${run}`);
      const bound = (
        await createKey(world.app, ownerA, A, { scopes: ['email:send'], projectId } as unknown as {
          scopes: string[];
        })
      ).key;
      const info = await transport(submission.port, bound).sendMail({
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'In project',
        text: 'x',
      });
      const email = await waitFor(() => getEmail(world.app, readKey, queuedId(info.response)));
      expect(email.projectId).toBe(projectId);
      await expect(
        transport(submission.port, bound).sendMail({
          from: FROM,
          to: 'delivered@sandbox.test',
          subject: 'Elsewhere',
          text: 'x',
          headers: { 'X-Tern-Project-Id': 'prj_other' },
        }),
      ).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringMatching(/projectId: Project not found/),
      });
    });

    it('the same validation as POST /emails/send: a bad Reply-To → 550 naming the field', async () => {
      await expect(
        transport(submission.port, sendKey).sendMail({
          from: FROM,
          to: 'delivered@sandbox.test',
          subject: 'x',
          text: 'x',
          headers: { 'X-Tern-Template-Id': 'tpl_missing' },
        }),
      ).rejects.toMatchObject({ responseCode: 550, response: expect.stringMatching(/templateId/) });
    });
  });

  describe('SMTP submission with swaks (Debian package)', () => {
    it('STARTTLS + AUTH PLAIN/LOGIN: 250 queued as <id>, delivered', async () => {
      for (const method of ['PLAIN', 'LOGIN']) {
        const { stdout } = await swaks({
          port: submission.port,
          password: sendKey,
          auth: method as 'PLAIN' | 'LOGIN',
          to: 'delivered@sandbox.test',
          subject: `swaks ${method}`,
          body: `sent by swaks with ${method}`,
        });
        const id = queuedId(stdout);
        const email = await waitForStatus(world.app, readKey, id, 'DELIVERED', ['email.delivered']);
        expect(email.subject).toBe(`swaks ${method}`);
        expect((await content(id)).text).toContain(`sent by swaks with ${method}`);
      }
    });

    it('two --to: one message to both, one email id', async () => {
      const { stdout } = await swaks({
        port: submission.port,
        password: sendKey,
        to: 'delivered@sandbox.test,second@sandbox.test',
        subject: 'swaks to two',
        body: 'to two people',
      });
      const id = queuedId(stdout);
      const email = await waitForStatus(world.app, readKey, id, 'DELIVERED', ['email.delivered']);
      expect(email.to).toEqual(['delivered@sandbox.test', 'second@sandbox.test']);
      expect(email.recipients.map((r) => [r.email, r.status])).toEqual([
        ['delivered@sandbox.test', 'DELIVERED'],
        ['second@sandbox.test', 'DELIVERED'],
      ]);
    });

    it('a wrong password → 535', async () => {
      const result = await swaks({
        port: submission.port,
        password: 'tern_live_nope',
        to: 'delivered@sandbox.test',
      }).catch((error: { stdout: string; code: number }) => error);
      expect((result as { stdout: string }).stdout).toMatch(/<~\* 535 5\.7\.8/);
    });
  });

  describe('bad input over SMTP', () => {
    it('41 MB → 552 and nothing queued; over the send path’s content limit → 552 with the reason', async () => {
      const before = await outgoingCount();
      const big =
        `Subject: big\r\nFrom: hello@acme.test\r\nTo: delivered@sandbox.test\r\n\r\n${'x'.repeat(76)}\r\n`.repeat(
          1,
        );
      const raw = big + `${'y'.repeat(998)}\r\n`.repeat(Math.ceil((41 * 1024 * 1024) / 1000));
      await expect(
        transport(submission.port, sendKey).sendMail({
          envelope: { from: 'hello@acme.test', to: ['delivered@sandbox.test'] },
          raw,
        }),
      ).rejects.toMatchObject({ responseCode: 552 });
      await expect(
        transport(submission.port, sendKey).sendMail({
          from: FROM,
          to: 'delivered@sandbox.test',
          subject: 'too much text',
          text: 'z'.repeat(300 * 1024),
        }),
      ).rejects.toMatchObject({ responseCode: 552, response: expect.stringMatching(/256 KiB|too big/i) });
      expect(await outgoingCount()).toBe(before);
    }, 60_000);

    it('malformed MIME → 550 with a reason, and the server goes on serving', async () => {
      const send = (raw: string) =>
        transport(submission.port, sendKey).sendMail({
          envelope: { from: 'hello@acme.test', to: ['delivered@sandbox.test'] },
          raw,
        });
      await expect(send('this is not a message\r\nat all\r\n')).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringMatching(/Malformed message: it does not start with a header section/),
      });
      await expect(
        send('Subject: no from\r\nTo: delivered@sandbox.test\r\n\r\nbody\r\n'),
      ).rejects.toMatchObject({
        responseCode: 550,
        response: expect.stringMatching(/From header must name exactly one address/),
      });
      const ok = await transport(submission.port, sendKey).sendMail({
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'still here',
        text: 'x',
      });
      expect(ok.response).toMatch(/queued as em_/);
    });

    it('a client that disconnects mid-DATA queues nothing', async () => {
      const dev = await start({ requireTls: false });
      const before = await outgoingCount();
      const socket = net.connect(dev.port, '127.0.0.1');
      let received = '';
      socket.on('data', (d) => {
        received += d.toString();
      });
      const waitFor250 = async (n: number) =>
        waitFor(() => ((received.match(/^(250|235|334|354) /gm) ?? []).length >= n ? true : null), {
          timeoutMs: 5000,
          description: `reply ${n}`,
        });
      await waitFor(() => (received.startsWith('220') ? true : null));
      socket.write('EHLO client\r\n');
      await waitFor250(1);
      socket.write(`AUTH PLAIN ${Buffer.from(`\0apikey\0${sendKey}`).toString('base64')}\r\n`);
      await waitFor250(2);
      socket.write('MAIL FROM:<hello@acme.test>\r\n');
      await waitFor250(3);
      socket.write('RCPT TO:<delivered@sandbox.test>\r\n');
      await waitFor250(4);
      socket.write('DATA\r\n');
      await waitFor250(5);
      socket.write(
        'From: hello@acme.test\r\nTo: delivered@sandbox.test\r\nSubject: half\r\n\r\nthe first half',
      );
      await new Promise((r) => setTimeout(r, 200));
      socket.destroy();
      await new Promise((r) => setTimeout(r, 1000));
      expect(received).toMatch(/^235 /m);
      expect(await outgoingCount()).toBe(before);
    });

    it('the log down → 451 and nothing kept; the client’s retry with the same Message-ID queues once', async () => {
      let down = true;
      const log: EventStream = {
        ...world.log,
        append: (events) =>
          down ? Promise.reject(new EventLogUnavailableError('log down (test)')) : world.log.append(events),
      };
      const app = await buildApp(world.stores, wallClock, {
        limits: { rateLimit: false },
        features: { sending: { log } },
      });
      closers.push(() => app.close());
      const flaky = await start({ app });
      const message = {
        from: FROM,
        to: 'delivered@sandbox.test',
        subject: 'retry me',
        text: 'x',
        messageId: `<retry-${run}@acme.test>`,
      };
      const before = await outgoingCount();
      await expect(transport(flaky.port, sendKey).sendMail(message)).rejects.toMatchObject({
        responseCode: 451,
        response: expect.stringMatching(/Event log unavailable/),
      });
      expect(await outgoingCount()).toBe(before);
      down = false;
      const first = await transport(flaky.port, sendKey).sendMail(message);
      const again = await transport(flaky.port, sendKey).sendMail(message);
      expect(queuedId(again.response)).toBe(queuedId(first.response));
      expect(await outgoingCount()).toBe(before + 1);
    });

    it('wrong passwords are counted by the failed-credential limiter: 535, then 454; a good key is still served (issue 24, item 5)', async () => {
      const app = await buildApp(world.stores, wallClock, {
        limits: { rateLimit: { max: 3, timeWindowMs: 60_000 } },
        features: { sending: { log: world.log } },
      });
      closers.push(() => app.close());
      const limited = await start({ app });
      const mail = { from: FROM, to: 'delivered@sandbox.test', subject: 's', text: 'x' };
      for (let i = 0; i < 3; i++) {
        await expect(transport(limited.port, `tern_live_guess${i}`).sendMail(mail)).rejects.toMatchObject({
          responseCode: 535,
        });
      }
      await expect(transport(limited.port, 'tern_live_guess9').sendMail(mail)).rejects.toMatchObject({
        responseCode: 454,
        response: expect.stringMatching(/Too many attempts: retry in \d+ s/),
      });
      // The limiter refuses guesses, never a valid credential from the same address.
      const served = await transport(limited.port, sendKey).sendMail(mail);
      expect(served.response).toMatch(/^250 /);
    });
  });
});

// Read-your-writes for SMTP submission (SPEC §25, issue 49 item 5): the `250` after DATA carries the
// send's position, read by the real clients (nodemailer's `info.response`, swaks' transcript); a
// `GET /emails/:id` over a socket with that `Tern-Consistent-With` answers 503 + Retry-After while
// the projector is stopped and 200 once it folds the send, never a 404.
describe('the position after DATA', () => {
  const TENANT = `smtp-pos-${suffix()}`;
  let world: SendingWorld;
  let tls: TlsPair;
  let submission: SubmissionServer;
  let apiUrl: string;
  let sendKey: string;
  let readKey: string;

  beforeAll(async () => {
    [world, tls] = await Promise.all([openSendingWorld({ sender: false }), selfSignedPair('localhost')]);
    await world.app.listen({ port: 0, host: '127.0.0.1' });
    const address = world.app.server.address();
    apiUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const owner = jwtFor(wallClock, TENANT);
    sendKey = (await createKey(world.app, owner, TENANT, { scopes: ['email:send'] })).key;
    readKey = (await createKey(world.app, owner, TENANT, { scopes: ['email:read'] })).key;
    submission = await startTlsSubmission(world.app, tls);
  }, 120_000);

  afterAll(() => closeAll(submission, world));

  /** The email id and the position of a `250 2.0.0 OK: queued as <id> position=<position>`. */
  const accepted = (response: string) => {
    const m =
      /^250 2\.0\.0 OK: queued as (em_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9]{20}) position=([A-Za-z0-9_.:-]+)\s*$/m.exec(
        response,
      );
    if (!m) throw new Error(`no id and position in ${response}`);
    return { id: m[1]!, position: m[2]! };
  };

  const read = (id: string, position: string) =>
    fetch(`${apiUrl}/emails/${id}`, {
      headers: { authorization: `Bearer ${readKey}`, 'tern-consistent-with': position },
    });

  describe('SMTP submission answers the position of its send', () => {
    it('nodemailer, several recipients: 503 + Retry-After while the projector is stopped, then 200', async () => {
      await world.projector.stop();
      let restarted = false;
      try {
        const info = await submissionClient(submission.port, tls, sendKey).sendMail({
          from: 'Acme <hello@acme.test>',
          to: ['first@example.com', 'second@example.com'],
          cc: 'cc@example.com',
          bcc: 'hidden@example.com',
          subject: 'Position please',
          text: 'Hello',
        });
        const { id, position } = accepted(info.response);
        // The position names the send's last event, as POST /emails/send answers it.
        expect(position).toBe(`${id}:queued`);
        const stale = await read(id, position);
        expect(stale.status).toBe(503);
        expect(stale.headers.get('retry-after')).toBe('1');

        const pending = read(id, position);
        await world.projector.start();
        restarted = true;
        const fresh = await pending;
        expect(fresh.status).toBe(200);
        expect(await fresh.json()).toMatchObject({ id, subject: 'Position please' });
      } finally {
        if (!restarted) await world.projector.start();
      }
    });

    it('swaks: the 250 line carries the position and a read with it answers 200', async () => {
      const { stdout } = await swaks({
        port: submission.port,
        password: sendKey,
        to: 'one@example.com,two@example.com',
        subject: 'From swaks',
        body: 'Hello',
        timeoutMs: 30_000,
      });
      const line = stdout.split('\n').find((l) => l.includes('queued as'));
      expect(line).toBeDefined();
      const { id, position } = accepted(line!.replace(/^<~?\s*/, ''));
      const res = await read(id, position);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id, subject: 'From swaks' });
    });
  });
});

// Issue 40 item 8, the SMTP side: a submitted message holds its bytes in the process's content
// budget (shared with POST /emails/send) while its DATA arrives, not only once it is buffered and
// handed to the route. Over real sockets: a raw client holds a large message half-sent; the same
// tenant's next message (nodemailer) is answered 451 4.3.1 and its HTTP send 429, another tenant's
// passes; once the first is answered the retry is accepted, and a client that hangs up mid-DATA
// gives its bytes back.
describe('the content budget over SMTP', () => {
  const MiB = 1024 * 1024;
  let world: SendingWorld;
  let app: FastifyInstance;
  let tls: TlsPair;
  let server: SubmissionServer;
  let keyStore: ApiKeyStore;
  const run = suffix();
  const A = `smtp-budget-a-${run}`;
  const B = `smtp-budget-b-${run}`;
  const keys: Record<string, string> = {};
  const budget = createContentBudget({ totalBytes: 12 * MiB, perTenantBytes: 6 * MiB });
  const raws: RawSmtp[] = [];

  beforeAll(async () => {
    [world, tls] = await Promise.all([openSendingWorld({ sender: false }), selfSignedPair('localhost')]);
    app = await buildApp(world.stores, wallClock, {
      limits: { rateLimit: false },
      features: { sending: { log: world.log, keyring: world.keyring, contentBudget: budget } },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    for (const t of [A, B])
      keys[t] = (await createKey(app, jwtFor(wallClock, t), t, { scopes: ['email:send'] })).key;
    keyStore = createApiKeyStore({
      pool: world.stores.pool,
      now: () => new Date(),
      cacheTtlMs: 2_000,
      lastUsedFlushMs: 60_000,
    });
    server = await startLoopbackSubmission(app, tls, {
      contentBudget: {
        budget,
        tenantOf: async (key) => (await keyStore.authenticate(key))?.tenantId ?? null,
      },
    });
  }, 120_000);

  afterAll(async () => {
    for (const c of raws) c.end();
    await server?.close();
    await keyStore?.close();
    await app?.close();
    await world?.close();
  });

  /** `mb` MiB of an attachment's base64 lines of 76 characters. */
  const base64Lines = (mb: number) => {
    const line = `${'QUJD'.repeat(19)}\r\n`;
    return line.repeat(Math.ceil((mb * MiB) / line.length));
  };

  /** A message of about `mb` MiB: a line of text and an attachment. */
  const message = (tenant: string, mb: number) => ({
    from: 'Acme <hello@acme.test>',
    to: 'someone@example.com',
    subject: `large from ${tenant}`,
    text: 'see attached',
    attachments: [{ filename: 'a.bin', content: Buffer.alloc(Math.floor((mb * MiB * 3) / 4), 7) }],
  });

  const transport = (tenant: string) => submissionClient(server.port, tls, keys[tenant]!);

  /** Sends `mb` MiB as `tenant` with nodemailer: the server's final answer code and text. */
  async function submit(tenant: string, mb: number): Promise<{ code: number; response: string }> {
    const t = transport(tenant);
    try {
      const info = await t.sendMail(message(tenant, mb));
      return { code: Number(info.response.slice(0, 3)), response: info.response };
    } catch (error) {
      const e = error as { responseCode?: number; response?: string; message: string };
      return { code: e.responseCode ?? 0, response: e.response ?? e.message };
    } finally {
      t.close();
    }
  }

  /** A raw session of `tenant` in DATA, `mb` MiB of its message written, the final dot held back. */
  async function halfSent(tenant: string, mb: number): Promise<RawSmtp> {
    const c = await rawSmtp(server.port);
    raws.push(c);
    await c.replies(1);
    await c.command('EHLO held.test');
    const auth = Buffer.from(`\0apikey\0${keys[tenant]}`).toString('base64');
    expect(await c.command(`AUTH PLAIN ${auth}`)).toMatch(/^235 /);
    expect(await c.command('MAIL FROM:<hello@acme.test>')).toMatch(/^250 /);
    expect(await c.command('RCPT TO:<someone@example.com>')).toMatch(/^250 /);
    expect(await c.command('DATA')).toMatch(/^354 /);
    c.socket.write(
      'From: hello@acme.test\r\nTo: someone@example.com\r\nSubject: held\r\nMIME-Version: 1.0\r\n' +
        'Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n' +
        '--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n' +
        `Content-Disposition: attachment; filename=a.bin\r\n\r\n${base64Lines(mb)}`,
    );
    return c;
  }

  /** A 3 MiB POST /emails/send of `tenant` over a real socket: its status. */
  async function httpSend(tenant: string): Promise<number> {
    const { port } = app.server.address() as { port: number };
    const { attachments, ...rest } = message(tenant, 3);
    const res = await fetch(`http://127.0.0.1:${port}/emails/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys[tenant]! },
      body: JSON.stringify({
        ...rest,
        attachments: attachments.map((a) => ({
          filename: a.filename,
          content: a.content.toString('base64'),
        })),
      }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  describe('SMTP submission holds its bytes in the content budget while DATA arrives (issue 40 item 8)', () => {
    it('a tenant past its share gets 451 4.3.1 (and 429 over HTTP); another tenant passes; the retry is accepted', async () => {
      const held = await halfSent(A, 4);
      await expect.poll(() => budget.held(), { timeout: 20_000 }).toBeGreaterThanOrEqual(4 * MiB);

      const refused = await submit(A, 3);
      expect(refused.code, refused.response).toBe(451);
      expect(refused.response).toMatch(/4\.3\.1 Too much message content in flight/);
      // The HTTP send routes share the budget.
      expect(await httpSend(A)).toBe(429);

      const other = await submit(B, 3);
      expect(other.code, other.response).toBe(250);

      expect(await held.command('--b--\r\n.', 30_000)).toMatch(/^250 2\.0\.0 OK: queued as em_/);
      held.end();
      await expect.poll(() => budget.held(), { timeout: 10_000 }).toBe(0);

      const retried = await submit(A, 3);
      expect(retried.code, retried.response).toBe(250);
      expect(budget.held()).toBe(0);
    });

    it('a client that hangs up mid-DATA gives its bytes back', async () => {
      const hung = await halfSent(A, 4);
      await expect.poll(() => budget.held(), { timeout: 20_000 }).toBeGreaterThanOrEqual(4 * MiB);
      hung.end();
      await expect.poll(() => budget.held(), { timeout: 10_000 }).toBe(0);
      expect((await submit(A, 3)).code).toBe(250);
    });
  });
});

// SMTP submission under abuse (issue 40, items 1 and the fuzz of "Also keep"), over real sockets:
// the shared guard of @tern/smtp-limits caps connections per client and in total, closes a session
// that does not authenticate in time however slowly it trickles bytes, closes a connection after
// 3 failed AUTHs, and random, damaged, pipelined and slow sessions never take it down.
describe('SMTP submission under abuse', () => {
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
});
