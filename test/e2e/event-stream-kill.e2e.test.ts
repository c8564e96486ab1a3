import { signDashboardToken } from '@tern/auth';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, freePort, startTern, type TernProcess } from './tern-process.js';

const JWT_SECRET = 'event-stream-kill-e2e-secret-0123456789abcdef';
const TENANT = 'stream-kill-e2e';
const EMAILS = 100; // queued, sent, delivered each: 300 events
const BATCH = 10;

interface StreamEvent {
  id: string;
  cursor: string;
}

/**
 * SPEC §25 / issue 42: "a stream resumed after a kill -9 of the server misses and repeats nothing".
 * The built all-in-one process (`npm start`, Kafka and Postgres) sends 100 sandbox emails in
 * batches; an independent SSE client (npm `eventsource`) tails `/events/stream`; the process is
 * killed with SIGKILL while events are still being appended and started again on the same port;
 * the client reconnects by itself with `Last-Event-ID`. At the end its sequence equals the
 * tenant's `GET /events` order: no gap, no duplicate, no reordering.
 */
describe('the event stream across a kill -9 of the server', () => {
  let db: { url: string; drop(): Promise<void> };
  let tern: TernProcess | undefined;
  let source: EventSource | undefined;

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
  }, 120_000);

  afterAll(async () => {
    source?.close();
    await tern?.stop();
    await db?.drop();
  });

  it(`${EMAILS * 3} events, SIGKILL mid-stream, restart: the client's sequence is the stream's`, async () => {
    const port = String(await freePort());
    const env = {
      NODE_ENV: 'production',
      PORT: port,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: db.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_TOPIC: uniqueName('stream-kill'),
      KAFKA_PARTITIONS: '3',
      // The killed member's place in the groups lapses sooner (the broker's minimum).
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      JWT_SECRET,
      INGEST_TOKEN: 'event-stream-kill-e2e-ingest-token-0123456789',
      TRACKING_SECRET: 'event-stream-kill-e2e-tracking-secret-0123',
      WEBHOOK_SECRETS_KEY: 'event-stream-kill-e2e-webhook-secrets-key',
      ENCRYPTION_KEY: 'event-stream-kill-e2e-encryption-key-0123456789ab',
      RATE_LIMIT_PER_MINUTE: '0',
      DATA_DIR: tempDir('tern-e2e-stream-kill-'),
    };
    const url = `http://127.0.0.1:${port}`;
    const auth = {
      authorization: `Bearer ${signDashboardToken({ secret: JWT_SECRET, tenantId: TENANT, role: 'owner', expiresInSeconds: 900 })}`,
    };
    const started = performance.now();
    tern = await startTern({ env });

    const send = async (batch: number) => {
      const res = await fetch(`${url}/emails/batch`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(
          Array.from({ length: BATCH }, (_, i) => ({
            from: 'a@acme.test',
            to: 'delivered@sandbox.test',
            subject: `B${batch} #${i}`,
            text: 'T',
          })),
        ),
      });
      expect(res.status).toBe(202);
    };

    // The independent client: the npm package's own reconnection and Last-Event-ID.
    const received: StreamEvent[] = [];
    const lastEventIds: string[] = [];
    let opened = 0;
    source = new EventSource(`${url}/events/stream`, {
      fetch: (input, init) =>
        fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }),
    });
    source.onopen = () => {
      opened += 1;
    };
    source.onmessage = (m) => {
      const e = JSON.parse(m.data) as StreamEvent;
      expect(m.lastEventId).toBe(e.cursor);
      lastEventIds.push(m.lastEventId);
      received.push(e);
    };

    // Half the batches, then the kill once the client is mid-stream and events are still coming.
    for (let b = 0; b < EMAILS / BATCH / 2; b++) await send(b);
    await waitFor(() => received.length >= 40 || undefined, {
      timeoutMs: 30_000,
      intervalMs: 10,
      description: 'the client mid-stream',
    });
    tern.child.kill('SIGKILL');
    await new Promise((r) => tern!.child.once('exit', r));
    const atKill = received.length;
    const lastBeforeKill = received.at(-1)!.cursor;

    tern = await startTern({ env });
    for (let b = EMAILS / BATCH / 2; b < EMAILS / BATCH; b++) await send(b);

    // Every email's three events in the stream, and the client caught up with it.
    const list = async (): Promise<StreamEvent[]> => {
      const out: StreamEvent[] = [];
      let after = '0';
      for (;;) {
        const page = (await (
          await fetch(`${url}/events?after=${after}&limit=1000`, { headers: auth })
        ).json()) as {
          data: StreamEvent[];
          next: string;
          hasMore: boolean;
        };
        out.push(...page.data);
        after = page.next;
        if (!page.hasMore) return out;
      }
    };
    const final = await waitFor(
      async () => {
        const all = await list();
        return all.length >= EMAILS * 3 && received.length >= all.length ? all : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250, description: 'every event streamed to the client' },
    );
    // Time for a duplicate or a late event to show up.
    await new Promise((r) => setTimeout(r, 1_000));
    const settled = await list();
    const elapsedMs = Math.round(performance.now() - started);

    // The kill fell mid-stream, and the client came back by itself after it.
    expect(atKill).toBeLessThan(settled.length);
    expect(opened).toBeGreaterThanOrEqual(2);
    expect(BigInt(received[atKill]?.cursor ?? '0')).toBeGreaterThan(BigInt(lastBeforeKill));
    expect(settled.map((e) => e.id)).toEqual(final.map((e) => e.id));
    // No gap, no duplicate, no reordering: the client's sequence is the tenant's order.
    expect(received.map((e) => e.id)).toEqual(settled.map((e) => e.id));
    expect(new Set(received.map((e) => e.id)).size).toBe(received.length);
    expect(lastEventIds).toEqual(settled.map((e) => e.cursor));
    console.info(
      `event stream kill -9: ${settled.length} events, ${atKill} before the kill, ${opened} connections, ${elapsedMs} ms`,
    );
    expect(elapsedMs).toBeLessThan(60_000);
  }, 150_000);
});
