// Issue 40 item 8: bytes of message content in flight are bounded in total and per tenant. Over a
// real socket (node:http, a body held half-sent so its bytes stay in flight): a second large send
// of the same tenant → 429 with Retry-After before its body is read, another tenant's still passes,
// and once the first is answered the retry is accepted.
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContentBudget } from '../../src/index.js';
import { openSendingWorld, type SendingWorld, wallClock } from '../sending-support.js';
import { buildApp, closeAll, createKey, jwtFor, suffix } from '../support.js';

const MiB = 1024 * 1024;
let world: SendingWorld;
let app: FastifyInstance;
let port: number;
const run = suffix();
const A = `budget-a-${run}`;
const B = `budget-b-${run}`;
const keys: Record<string, string> = {};
const budget = createContentBudget({ totalBytes: 12 * MiB, perTenantBytes: 6 * MiB });

beforeAll(async () => {
  world = await openSendingWorld({ sender: false });
  app = await buildApp(world.stores, wallClock, {
    limits: { rateLimit: false },
    features: { sending: { log: world.log, keyring: world.keyring, contentBudget: budget } },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
  for (const t of [A, B])
    keys[t] = (await createKey(app, jwtFor(wallClock, t), t, { scopes: ['email:send'] })).key;
}, 120_000);

afterAll(() => closeAll(app, world));

/** A send of about `mb` MiB (an attachment), as bytes. */
const body = (mb: number) =>
  Buffer.from(
    JSON.stringify({
      from: 'Acme <hello@acme.test>',
      to: 'someone@example.com',
      subject: 'large',
      text: 'see attached',
      attachments: [
        {
          filename: 'a.bin',
          content: Buffer.alloc(Math.floor((mb * MiB * 3) / 4) - 300, 7).toString('base64'),
        },
      ],
    }),
  );

/** Starts a request; `finish()` writes the rest of the body; `answer` resolves with status and headers. */
function request(tenant: string, bytes: Buffer, holdBack = 0) {
  let finish = () => {};
  const answer = new Promise<{ status: number; retryAfter?: string; body: string }>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/emails/send',
        headers: {
          'content-type': 'application/json',
          'content-length': bytes.length,
          'x-api-key': keys[tenant],
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'] as string,
            body: text,
          }),
        );
      },
    );
    req.on('error', reject);
    req.write(bytes.subarray(0, bytes.length - holdBack));
    finish = () => req.end(bytes.subarray(bytes.length - holdBack));
    if (holdBack === 0) req.end();
  });
  return { answer, finish: () => finish() };
}

describe('content in flight (issue 40 item 8)', () => {
  it('a second large send of one tenant → 429 + Retry-After; another tenant passes; the retry is accepted', async () => {
    const first = request(A, body(5), 10);
    // The first request's bytes are held once its headers are read.
    await expect.poll(() => budget.held(), { timeout: 10_000 }).toBeGreaterThan(0);
    const second = await request(A, body(5)).answer;
    expect(second.status).toBe(429);
    expect(second.retryAfter).toBe('2');
    expect(JSON.parse(second.body).code).toBe('RATE_LIMITED');
    expect((await request(B, body(5)).answer).status).toBe(202);
    first.finish();
    expect((await first.answer).status).toBe(202);
    expect(budget.held()).toBe(0);
    expect((await request(A, body(5)).answer).status).toBe(202);
    expect(budget.held()).toBe(0);
  });

  it('a client that hangs up mid-body gives its bytes back', async () => {
    const hung = request(A, body(5), 10);
    hung.answer.catch(() => {});
    await expect.poll(() => budget.held(), { timeout: 10_000 }).toBeGreaterThan(0);
    // Destroy the socket: the request is aborted.
    await new Promise((r) => setTimeout(r, 50));
    app.server.closeAllConnections();
    await expect.poll(() => budget.held(), { timeout: 10_000 }).toBe(0);
  });
});
