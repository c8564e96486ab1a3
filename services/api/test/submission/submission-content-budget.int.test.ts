// Issue 40 item 8, the SMTP side: a submitted message holds its bytes in the process's content
// budget (shared with POST /emails/send) while its DATA arrives, not only once it is buffered and
// handed to the route. Over real sockets: a raw client holds a large message half-sent; the same
// tenant's next message (nodemailer) is answered 451 4.3.1 and its HTTP send 429, another tenant's
// passes; once the first is answered the retry is accepted, and a client that hangs up mid-DATA
// gives its bytes back.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RawSmtp, rawSmtp } from '../../../../test/support/smtp-raw.js';
import {
  type ApiKeyStore,
  createApiKeyStore,
  createContentBudget,
  type SubmissionServer,
  selfSignedPair,
  type TlsPair,
} from '../../src/index.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { buildApp, createKey, jwtFor, suffix } from '../support.js';
import { startLoopbackSubmission, submissionClient } from './session.js';

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
    contentBudget: { budget, tenantOf: async (key) => (await keyStore.authenticate(key))?.tenantId ?? null },
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
      attachments: attachments.map((a) => ({ filename: a.filename, content: a.content.toString('base64') })),
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
