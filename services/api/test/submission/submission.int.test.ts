// SMTP submission (SPEC §22) with real clients nobody here wrote: nodemailer and swaks (Debian),
// over STARTTLS with AUTH, into the real send path (Postgres, the event log, the projector, the
// sender with the sandbox provider).
import net from 'node:net';
import { EventLogUnavailableError, type EventStream } from '@tern/event-log';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/services.js';
import { type SubmissionServer, selfSignedPair, type TlsPair } from '../../src/index.js';
import {
  getEmail,
  openSendingWorld,
  type SendingWorld,
  waitForStatus,
  wallClock,
} from '../sending-support.js';
import { bearer, buildApp, createKey, createProject, jwtFor, suffix } from '../support.js';
import { startLoopbackSubmission, submissionClient, swaks } from './session.js';

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
  const m = /queued as (em_[A-Za-z0-9]{24})/.exec(response);
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
