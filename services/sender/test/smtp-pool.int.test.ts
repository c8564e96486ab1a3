// Pooled SMTP connections (issue 29): the SMTP provider against a real SMTP server (`smtp-server`)
// that counts the connections it is given and the messages each one carries.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countConnections } from '../../../test/support/smtp-sink.js';
import { createSmtpProvider, type MailProvider } from '../src/index.js';

interface Relay {
  url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** The most connections open at once. */
  peak(): number;
  /** Messages received on each connection (by session id). */
  perConnection(): number[];
  reset(): void;
  close(): Promise<void>;
}

function startRelay(): Promise<Relay> {
  const { count, options: counting } = countConnections();
  let messages = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    ...counting,
    onData(stream, session, callback) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        messages.set(session.id, (messages.get(session.id) ?? 0) + 1);
        // A little work per message, so messages queue up behind busy connections.
        setTimeout(() => callback(), 5);
      });
    },
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.server.address() as AddressInfo;
      resolve({
        url: `smtp://127.0.0.1:${port}`,
        connections: () => count.accepted,
        peak: () => count.peak,
        perConnection: () => [...messages.values()],
        reset() {
          count.accepted = 0;
          count.peak = count.open;
          messages = new Map();
        },
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

const mail = (i: number) => ({
  messageId: `<em_pool${i}@tern.test>`,
  from: 'Acme <hello@acme.test>',
  to: `reader${i}@example.com`,
  cc: [],
  bcc: [],
  replyTo: null,
  subject: `Pool ${i}`,
  html: null,
  text: `Message ${i}`,
  headers: {},
});

/** Sends `n` messages side by side (as a claim round does); every one must be accepted. */
async function sendAll(provider: MailProvider, n: number, from = 0): Promise<void> {
  const results = await Promise.all(
    Array.from({ length: n }, (_, k) =>
      provider.send(mail(from + k), { tenantId: 'pool', emailId: `em_pool${from + k}` }),
    ),
  );
  expect(results.map((r) => r.kind)).toEqual(Array(n).fill('sent'));
}

/** Waits until the relay saw every pooled connection close. */
const settle = () => new Promise((r) => setTimeout(r, 100));

let relay: Relay;
beforeAll(async () => {
  relay = await startRelay();
});
afterAll(async () => {
  await relay?.close();
});

describe('pooled SMTP connections (nodemailer pool, SMTP_MAX_CONNECTIONS / SMTP_MAX_MESSAGES)', () => {
  it('sends one after another over one kept-open connection by default', async () => {
    relay.reset();
    const provider = createSmtpProvider({ url: relay.url });
    for (let i = 0; i < 6; i++) await sendAll(provider, 1, i);
    await provider.close?.();
    await settle();
    expect(relay.connections()).toBe(1);
    expect(relay.perConnection()).toEqual([6]);
  });

  it('at most maxConnections at once, each replaced after maxMessages', async () => {
    relay.reset();
    const provider = createSmtpProvider({ url: relay.url, pool: { maxConnections: 3, maxMessages: 10 } });
    await sendAll(provider, 60);
    await provider.close?.();
    await settle();
    expect(relay.peak()).toBeLessThanOrEqual(3);
    expect(relay.peak()).toBeGreaterThan(1);
    expect(relay.perConnection().reduce((a, b) => a + b, 0)).toBe(60);
    expect(Math.max(...relay.perConnection())).toBeLessThanOrEqual(10);
    // 60 messages of at most 10 per connection: 6 connections at least, far fewer than 60.
    expect(relay.connections()).toBeGreaterThanOrEqual(6);
    expect(relay.connections()).toBeLessThan(20);
  });

  it("the relay URL's own maxConnections wins over the configured pool", async () => {
    relay.reset();
    const provider = createSmtpProvider({
      url: `${relay.url}?maxConnections=1`,
      pool: { maxConnections: 4, maxMessages: 100 },
    });
    await sendAll(provider, 12);
    await provider.close?.();
    await settle();
    expect(relay.peak()).toBe(1);
    expect(relay.connections()).toBe(1);
  });

  it('pool: false opens a connection per message', async () => {
    relay.reset();
    const provider = createSmtpProvider({ url: relay.url, pool: false });
    for (let i = 0; i < 4; i++) await sendAll(provider, 1, i);
    await provider.close?.();
    await settle();
    expect(relay.connections()).toBe(4);
    expect(relay.perConnection()).toEqual([1, 1, 1, 1]);
  });
});
