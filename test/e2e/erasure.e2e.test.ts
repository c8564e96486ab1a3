import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { signDashboardToken } from '@tern/auth';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, MAIN, startTern, type TernProcess } from './tern-process.js';

const run = promisify(execFile);
const REBUILD = resolve(MAIN, '../rebuild.js');

const JWT_SECRET = 'erasure-e2e-secret-0123456789abcdef';
const INGEST_TOKEN = 'erasure-e2e-ingest-token-0123456789';
const TRACKING_SECRET = 'erasure-e2e-tracking-secret-0123456789';
const WEBHOOK_SECRETS_KEY = 'erasure-e2e-webhook-secrets-key-0123456789';
const ENCRYPTION_KEY = 'erasure-e2e-encryption-key-0123456789abcdef';
const TENANT = 'erasure-e2e';

const ERASED = 'erin.erased@example.com';
const KEPT = ['bob.kept@example.com', 'carol.kept@example.com'];
const OUTSIDE = 'dave.outside@example.com';
const subjectOf = (to: string, n: number) => `Private subject ${n} for ${to.split('@')[0]}`;

/**
 * SPEC §14 erasure, end to end on the built process, for both event-log adapters: several
 * recipients get mail (API sends, one outside event on `POST /events`), a webhook records the
 * deliveries; the raw log holds no address or subject in clear; `POST /contacts/erase` scrubs
 * every Postgres table of the erased address and subjects while counts and analytics stay;
 * `npm run rebuild` (the real script) replays the log and the data stays gone while the other
 * recipients come back; a later send to the erased address is suppressed.
 */
describe.each([
  { adapter: 'Kafka', kafka: true },
  { adapter: 'Postgres table', kafka: false },
])('erasure that survives a replay ($adapter event log)', ({ kafka }) => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  let env: Record<string, string>;
  let tern: TernProcess | undefined;
  let hooks: Server;
  const received: string[] = [];
  const topic = uniqueName('erasure-e2e');
  const jwt = signDashboardToken({
    secret: JWT_SECRET,
    tenantId: TENANT,
    role: 'owner',
    expiresInSeconds: 3600,
  });
  const headers = { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' };
  /** The answers this test reads, loosely: each field is checked by the assertions. */
  type Answer = {
    id: string;
    status: string;
    toEmail: string | null;
    counts: Record<string, number>;
    totals: Record<string, number>;
    rates: unknown;
    daily: unknown;
    data: { id: string; toEmail: string | null; subject: string | null; status: string }[];
    meta: { total: number };
  };
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${tern!.url}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Answer };
  };

  /** Every row of every table of the public schema, as text (the whole Postgres read side). */
  async function databaseText(): Promise<string> {
    const { rows: tables } = await pool.query<{ name: string }>(
      "SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public'",
    );
    let all = '';
    for (const { name } of tables) {
      const { rows } = await pool.query<{ t: string }>(`SELECT t::text AS t FROM ${name} t`);
      all += `${name}\n${rows.map((r) => r.t).join('\n')}\n`;
    }
    return all;
  }

  /** The raw bytes of the event log: the topic read by a plain kafkajs consumer, or the table rows. */
  async function rawLog(): Promise<string> {
    if (!kafka) {
      const { rows } = await pool.query<{ key: string; value: string }>('SELECT key, value FROM event_log');
      return rows.map((r) => `${r.key} ${r.value}`).join('\n');
    }
    const client = new Kafka({ brokers: testServices().kafkaBrokers, logLevel: logLevel.NOTHING });
    const admin = client.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(topic);
    await admin.disconnect();
    const total = offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
    const consumer = client.consumer({ groupId: uniqueName('erasure-raw') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const chunks: Buffer[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        chunks.push(message.key ?? Buffer.alloc(0), message.value ?? Buffer.alloc(0));
      },
    });
    await waitFor(() => chunks.length / 2 >= total, { timeoutMs: 90_000, description: 'raw topic read' });
    await consumer.disconnect();
    return Buffer.concat(chunks.flatMap((c) => [c, Buffer.from('\n')])).toString('latin1');
  }

  async function logsByRecipient() {
    const page = await api('GET', '/emails/logs?limit=100');
    expect(page.status).toBe(200);
    return page.body as {
      data: { id: string; toEmail: string | null; subject: string | null; status: string }[];
      meta: { total: number };
    };
  }

  /** The analytics answers without their clock-dependent period (`until` is now). */
  const analytics = async () => {
    const [summary, daily] = await Promise.all([
      api('GET', '/analytics/summary?days=7'),
      api('GET', '/analytics/daily?days=7'),
    ]);
    expect(summary.status).toBe(200);
    return { totals: summary.body.totals, rates: summary.body.rates, daily: daily.body.daily };
  };

  beforeAll(async () => {
    buildTern();
    db = await createFreshDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => undefined);
    hooks = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        received.push(body);
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
    env = {
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      ...(kafka
        ? { KAFKA_BROKERS: testServices().kafkaBrokers.join(','), KAFKA_TOPIC: topic, KAFKA_PARTITIONS: '2' }
        : {}),
      JWT_SECRET,
      INGEST_TOKEN,
      TRACKING_SECRET,
      WEBHOOK_SECRETS_KEY,
      ENCRYPTION_KEY,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      DATA_DIR: tempDir('tern-e2e-erasure-'),
    };
    tern = await startTern({ env });
  }, 180_000);

  afterAll(async () => {
    await tern?.stop();
    await new Promise((r) => hooks?.close(r));
    await pool?.end();
    await db?.drop();
  });

  it('erases one recipient everywhere, keeps counts, survives npm run rebuild, suppresses a later send', async () => {
    const address = hooks.address();
    const hookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    expect((await api('POST', '/webhooks', { url: hookUrl })).status).toBe(201);
    expect(
      (await api('POST', '/contacts', { email: ERASED, firstName: 'Erin', audiences: ['vip'] })).status,
    ).toBe(201);

    const recipients = [ERASED, ...KEPT];
    const idsOf = new Map<string, string[]>();
    for (const to of recipients) {
      for (const n of [1, 2]) {
        const sent = await api('POST', '/emails/send', {
          from: 'Acme <hello@acme.test>',
          to,
          subject: subjectOf(to, n),
          text: `Body ${n} for ${to}`,
        });
        expect(sent.status).toBe(202);
        idsOf.set(to, [...(idsOf.get(to) ?? []), sent.body.id]);
      }
    }
    // An outside pipeline reports mail it sent itself: clear fields on POST /events.
    const outsideId = `ext_${topic.replace(/[^A-Za-z0-9]/g, '').slice(-20)}`;
    const posted = await fetch(`${tern!.url}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        id: `${outsideId}-q`,
        type: 'email.queued',
        tenantId: TENANT,
        emailId: outsideId,
        occurredAt: new Date().toISOString(),
        data: { toEmail: OUTSIDE, subject: subjectOf(OUTSIDE, 1) },
      }),
    });
    expect(posted.status).toBe(202);

    // Every email projected and delivered; one webhook delivery per event recorded.
    await waitFor(
      async () => {
        const logs = await logsByRecipient();
        return logs.meta.total === 7 && logs.data.filter((e) => e.status === 'DELIVERED').length === 6;
      },
      { timeoutMs: 90_000, intervalMs: 250, description: 'all emails delivered' },
    );
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE request_body IS NOT NULL AND email_id = ANY($1)',
          [idsOf.get(ERASED)],
        );
        return rows[0].n >= 6; // queued, sent, delivered × 2
      },
      // Bounds of 90 s like the split-mode waits: room for a consumer-group rebalance on a busy broker.
      { timeoutMs: 90_000, intervalMs: 250, description: 'webhook deliveries recorded' },
    );
    const before = await logsByRecipient();
    const beforeAnalytics = await analytics();
    expect(beforeAnalytics.totals).toMatchObject({ total: 7 });
    expect(await databaseText()).toContain(ERASED);
    expect(received.join('\n')).toContain(ERASED); // the endpoint was told (before the erasure)

    // The raw log: no address and no subject of any recipient, the outside event included.
    const raw = await rawLog();
    expect(raw).toContain('"sealed"');
    expect(raw).toContain(outsideId);
    for (const to of [...recipients, OUTSIDE]) {
      expect(raw).not.toContain(to);
      expect(raw).not.toContain(subjectOf(to, 1));
    }

    // Erasure: 202 with what it found, then 200 with nothing left to do.
    const erased = await api('POST', '/contacts/erase', { email: ERASED.toUpperCase() });
    expect(erased.status).toBe(202);
    expect(erased.body.counts).toMatchObject({ contacts: 1, emails: 2, sandboxMessages: 2 });
    expect(erased.body.counts.dataKeys).toBeGreaterThanOrEqual(1);
    expect(erased.body.counts.webhookDeliveries).toBeGreaterThanOrEqual(6);
    const again = await api('POST', '/contacts/erase', { email: ERASED });
    expect(again.status).toBe(200);
    expect(Object.values(again.body.counts).every((n) => n === 0)).toBe(true);

    const checkScrubbed = async () => {
      const logs = await logsByRecipient();
      expect(logs.meta.total).toBe(before.meta.total);
      for (const id of idsOf.get(ERASED)!) {
        const entry = logs.data.find((e) => e.id === id)!;
        expect(entry).toMatchObject({ toEmail: null, subject: null, status: 'DELIVERED' });
        const detail = await api('GET', `/emails/${id}`);
        expect(detail.status).toBe(200);
        expect(detail.body.toEmail).toBeNull();
        expect((await api('GET', `/emails/${id}/content`)).status).toBe(404);
      }
      for (const to of [...KEPT, OUTSIDE])
        expect(
          logs.data
            .filter((e) => e.toEmail === to)
            .map((e) => e.subject)
            .sort(),
        ).toEqual(to === OUTSIDE ? [subjectOf(to, 1)] : [subjectOf(to, 1), subjectOf(to, 2)]);
      const text = await databaseText();
      expect(text).not.toContain(ERASED);
      for (const n of [1, 2]) expect(text).not.toContain(subjectOf(ERASED, n));
      expect(text).toContain(KEPT[0]);
      expect(await analytics()).toEqual(beforeAnalytics);
    };
    await checkScrubbed();
    expect(await api('GET', `/contacts?audience=vip`)).toMatchObject({ body: { data: [] } });

    // npm run rebuild: the whole log replayed into fresh projections.
    await tern!.stop();
    tern = undefined;
    const rebuilt = await run(process.execPath, [REBUILD], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
      timeout: 120_000,
    });
    expect(rebuilt.stdout).toMatch(/rebuilt from \d+ records/);
    tern = await startTern({ env });
    await checkScrubbed();

    // A later send to the erased address is suppressed (its keyed hash is on the list).
    const later = await api('POST', '/emails/send', {
      from: 'Acme <hello@acme.test>',
      to: ERASED,
      subject: 'After erasure',
      text: 'Hi',
    });
    expect(later.status).toBe(202);
    await waitFor(async () => (await api('GET', `/emails/${later.body.id}`)).body?.status === 'SUPPRESSED', {
      timeoutMs: 90_000,
      intervalMs: 250,
      description: 'the later send suppressed',
    });
  }, 540_000);
});
