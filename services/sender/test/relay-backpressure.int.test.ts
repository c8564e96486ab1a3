// Back-pressure from the relay (issue 45, item 1): a real SMTP server (`smtp-server`) that takes
// few connections at once (`maxClients`: past it, `421 Too many connected clients`) and answers 421
// to some MAIL FROM; the SMTP provider (and the sender with real Postgres and the table log) backs
// off and every message arrives exactly once.
import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import { queuedEvent } from '@tern/domain';
import { createEventStream, type PostgresEventLog } from '@tern/event-log';
import { isSuppressed } from '@tern/read-models';
import { getTemplate } from '@tern/templates';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimTestKey } from '../../../test/support/dkim-key.js';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import { waitFor } from '../../../test/support/services.js';
import {
  countConnections,
  type SmtpSink,
  smtpError,
  startSmtpSink,
} from '../../../test/support/smtp-sink.js';
import { createSender, createSmtpProvider } from '../src/index.js';

/** A relay of at most `maxClients` connections that refuses every `every`-th MAIL FROM with a 421. */
async function startBusyRelay(maxClients: number, every: number) {
  let mailFroms = 0;
  let refusals = 0;
  const { count, options: counting } = countConnections();
  const sink: SmtpSink = await startSmtpSink({
    maxClients,
    ...counting,
    onMailFrom(_address, _session, callback) {
      if (++mailFroms % every === 0) {
        refusals++;
        return callback(smtpError(421, '4.7.0 too many messages, slow down'));
      }
      callback();
    },
    // Each message takes a moment, so the pool wants more connections than the relay takes.
    onRcptTo(_address, _session, callback) {
      setTimeout(() => callback(), 15);
    },
  });
  return {
    sink,
    refusals: () => refusals,
    peak: () => count.peak,
    /** How often each X-Tern-Email-Id arrived. */
    arrivals(): Map<string, number> {
      const counts = new Map<string, number>();
      for (const m of sink.received) {
        const id = /^X-Tern-Email-Id: (\S+)/im.exec(m.raw)?.[1] ?? '?';
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      return counts;
    },
  };
}

const mail = (id: string) => ({
  messageId: `<${id}@tern.test>`,
  from: 'Acme <hello@acme.test>',
  to: `${id}@example.com`,
  cc: [],
  bcc: [],
  replyTo: null,
  subject: 'Back-pressure',
  html: null,
  text: 'Hi',
  headers: { 'X-Tern-Email-Id': id },
});

type Provider = ReturnType<typeof createSmtpProvider>;

/**
 * `count` messages sent at once (ids `${prefix}0`…) by an SMTP provider on `relay` with the
 * connection `pool`; `check` gets the ids, the results and the provider, then both close.
 */
async function sendAtOnce(
  relay: Awaited<ReturnType<typeof startBusyRelay>>,
  pool: { startConnections: number; maxConnections: number; maxMessages: number },
  prefix: string,
  count: number,
  check: (ids: string[], results: Awaited<ReturnType<Provider['send']>>[], provider: Provider) => void,
) {
  const provider = createSmtpProvider({ url: relay.sink.url, timeoutMs: 5000, pool });
  try {
    const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
    const results = await Promise.all(
      ids.map((id) => provider.send(mail(id), { tenantId: 'bp', emailId: id })),
    );
    check(ids, results, provider);
  } finally {
    await provider.close?.();
    await relay.sink.close();
  }
}

describe('the relay pushes back (issue 45)', () => {
  it('the provider halves its connections on 421s and hands every message over once', async () => {
    const relay = await startBusyRelay(3, 7);
    const pool = { startConnections: 12, maxConnections: 32, maxMessages: 100 };
    await sendAtOnce(relay, pool, 'em_bp', 120, (ids, results, provider) => {
      expect(results.map((r) => r.kind)).toEqual(Array(ids.length).fill('sent'));
      const arrivals = relay.arrivals();
      expect([...arrivals.keys()].sort()).toEqual([...ids].sort());
      expect([...arrivals.values()].every((n) => n === 1)).toBe(true);
      expect(relay.refusals()).toBeGreaterThan(0);
      expect(relay.peak()).toBeLessThanOrEqual(3);
      // It started at 12 in flight; the relay's 421s (connections past 3, every 7th MAIL FROM) halved it.
      expect(provider.capacity!().inFlight).toBeLessThan(12);
    });
  });

  it('signed mail handed over again after a 421 arrives whole, once, DKIM pass', async () => {
    const key = dkimTestKey('acme.test');
    const relay = await startBusyRelay(2, 3);
    const provider = createSmtpProvider({
      url: relay.sink.url,
      timeoutMs: 5000,
      pool: { startConnections: 6, maxConnections: 8, maxMessages: 100 },
    });
    try {
      const ids = Array.from({ length: 24 }, (_, i) => `em_bps${i}`);
      const results = await Promise.all(
        ids.map((id) =>
          provider.send(mail(id), {
            tenantId: 'bp',
            emailId: id,
            signing: { dkim: { domain: 'acme.test', selector: 'tern1', privateKey: key.privateKey } },
          }),
        ),
      );
      expect(results.map((r) => r.kind)).toEqual(Array(ids.length).fill('sent'));
      // Messages were handed over again after a refusal at MAIL FROM or a connection past 2, and
      // nodemailer's pool re-queues the same mail after a connection closes: the signed bytes must
      // be readable again (a Buffer, not a stream: a stream fails the retry with ESTREAM, "Content
      // stream was already read"). Every copy that arrived is whole and its signature verifies.
      expect(relay.refusals()).toBeGreaterThan(0);
      expect([...relay.arrivals().entries()].sort()).toEqual(ids.map((id) => [id, 1]).sort());
      for (const got of relay.sink.received) {
        const verdict = await key.verify(got.raw);
        expect(verdict.results.map((r) => r.status.result)).toEqual(['pass']);
        expect(got.raw).toMatch(/\r\n\r\nHi/);
      }
    } finally {
      await provider.close?.();
      await relay.sink.close();
    }
  });

  it('a relay that takes more: the bound grows from its start while messages wait', async () => {
    const relay = await startBusyRelay(100, 1_000_000);
    const pool = { startConnections: 2, maxConnections: 16, maxMessages: 100 };
    await sendAtOnce(relay, pool, 'em_grow', 100, (_ids, results, provider) => {
      expect(results.every((r) => r.kind === 'sent')).toBe(true);
      expect(provider.capacity!().inFlight).toBe(16);
      expect(relay.peak()).toBeGreaterThan(2);
      expect(relay.peak()).toBeLessThanOrEqual(16);
    });
  });

  describe('the sender (Postgres, table log)', () => {
    let db: LogDatabase;
    let pool: pg.Pool;
    let log: PostgresEventLog;
    const TENANT = 'bp-tenant';

    beforeAll(async () => {
      db = await openLogDatabase();
      ({ pool, log } = db);
    }, 60_000);
    afterAll(async () => {
      await db?.close();
    });

    async function eventsOf(id: string): Promise<DeliveryEvent[]> {
      const { rows } = await pool.query<{ value: string }>(
        'SELECT value FROM event_log WHERE key = $1 ORDER BY seq',
        [id],
      );
      return rows.map((r) => deliveryEventSchema.parse(JSON.parse(r.value)));
    }

    it('80 emails through a relay of 3 connections that answers 421: each sent once, none lost', async () => {
      const relay = await startBusyRelay(3, 7);
      const sender = createSender({
        pool,
        log: createEventStream(log),
        provider: createSmtpProvider({
          url: relay.sink.url,
          timeoutMs: 5000,
          pool: { startConnections: 16, maxConnections: 64, maxMessages: 100 },
        }),
        isSuppressed,
        getTemplate,
        tracking: { secret: 'bp-tracking-secret-0123456789', publicUrl: 'http://127.0.0.1:3000' },
        messageIdDomain: 'tern.test',
        pollIntervalMs: 50,
        retryDelaysMs: [100, 150, 200, 250, 300],
        group: 'tern-sender-backpressure-test',
      });
      const ids = Array.from({ length: 80 }, (_, i) => `em_bps${i}_${Date.now()}`);
      try {
        for (const id of ids)
          await pool.query(
            `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message) VALUES ($1, $2, 'awaiting_log', now(), $3)`,
            [
              TENANT,
              id,
              JSON.stringify({ from: 'hello@acme.test', to: `${id}@example.com`, subject: 'S', text: 'T' }),
            ],
          );
        await createEventStream(log).append(
          ids.map((id) =>
            queuedEvent({
              tenantId: TENANT,
              emailId: id,
              at: new Date(),
              toEmail: `${id}@example.com`,
              subject: 'S',
            }),
          ),
        );
        await sender.start();
        const timelines = await waitFor(
          async () => {
            const all = await Promise.all(ids.map(eventsOf));
            return all.every((t) => t.at(-1)?.type === 'email.sent') ? all : null;
          },
          { timeoutMs: 60_000, description: 'every email sent' },
        );
        // Nothing delayed, nothing sent twice: the push-back cost no attempt of any email.
        for (const t of timelines) expect(t.map((e) => e.type)).toEqual(['email.queued', 'email.sent']);
        const arrivals = relay.arrivals();
        expect(ids.map((id) => arrivals.get(id) ?? 0)).toEqual(ids.map(() => 1));
        expect(relay.refusals()).toBeGreaterThan(0);
        expect(relay.peak()).toBeLessThanOrEqual(3);
      } finally {
        await sender.stop();
        await relay.sink.close();
      }
    }, 90_000);
  });
});
