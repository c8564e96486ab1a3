import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { signDashboardToken } from '@tern/auth';
import { createUnsubscribeToken } from '@tern/domain';
import { kafkajs } from '@tern/event-log';
import { createKeyring } from '@tern/privacy';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFreshDatabase, tempDir, testServices, uniqueName, waitFor } from '../support/services.js';
import { buildTern, MAIN, startTern, type TernProcess } from './tern-process.js';

const { Kafka, logLevel } = kafkajs();

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
/** Gets mail with the erased address in cc, bcc and reply-to (someone else's mail naming it). */
const FRIEND = 'fred.friend@example.com';
const FRIEND_SUBJECT = 'Minutes, with Erin in copy';
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

  /**
   * Every column of every table of the public schema that can hold text (text, varchar, json,
   * jsonb, arrays; bytea as hex), enumerated from information_schema: the whole Postgres side.
   */
  async function databaseText(): Promise<string> {
    const { rows: columns } = await pool.query<{ t: string; c: string; type: string }>(
      `SELECT quote_ident(c.table_name) AS t, quote_ident(c.column_name) AS c, c.data_type AS type
         FROM information_schema.columns c
         JOIN information_schema.tables t USING (table_schema, table_name)
        WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
          AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea')`,
    );
    expect(columns.length).toBeGreaterThan(20);
    let all = '';
    for (const { t, c, type } of columns) {
      const value = type === 'bytea' ? `encode(${c}, 'hex')` : `${c}::text`;
      const { rows } = await pool.query<{ v: string | null }>(`SELECT ${value} AS v FROM ${t}`);
      all += `${t}.${c}\n${rows.map((r) => r.v ?? '').join('\n')}\n`;
    }
    return all;
  }

  /**
   * The bytes of every data file of `data_keys` (main fork and its segments, its TOAST table and
   * the indexes), after a CHECKPOINT wrote every page: where a deleted row's bytes would survive.
   * Read directly under the server's data directory (this test runs as its owner); an unreadable
   * directory fails the test, it never skips the check.
   */
  async function dataKeysFiles(): Promise<Buffer> {
    await pool.query('CHECKPOINT');
    const { rows: dir } = await pool.query<{ d: string }>("SELECT current_setting('data_directory') AS d");
    const dataDir = dir[0]!.d;
    const { rows } = await pool.query<{ path: string }>(
      `SELECT pg_relation_filepath(oid) AS path FROM pg_class
        WHERE oid = 'data_keys'::regclass
           OR oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'data_keys'::regclass)
           OR oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'data_keys'::regclass)`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const chunks: Buffer[] = [];
    for (const { path } of rows) {
      const file = join(dataDir, path);
      let names: string[];
      try {
        names = readdirSync(dirname(file));
      } catch (error) {
        throw new Error(
          `cannot read the Postgres data directory ${dirname(file)} (run this test as the server's owner): ${(error as Error).message}`,
        );
      }
      const segments = names.filter((n) => n === basename(file) || n.startsWith(`${basename(file)}.`));
      expect(segments).toContain(basename(file));
      for (const n of segments) chunks.push(readFileSync(join(dirname(file), n)));
    }
    return Buffer.concat(chunks);
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
        // An endpoint that echoes what it got: the answer Tern keeps names the recipient.
        res.writeHead(200).end(`ok ${body}`);
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
    // Someone else's mail names the erased address in cc, bcc and reply-to.
    const copied = await api('POST', '/emails/send', {
      from: 'Acme <hello@acme.test>',
      to: FRIEND,
      cc: [ERASED, KEPT[0]],
      bcc: [ERASED.toUpperCase()],
      replyTo: ERASED,
      subject: FRIEND_SUBJECT,
      text: 'Minutes attached',
    });
    expect(copied.status).toBe(202);
    const friendId = copied.body.id;
    // An outside pipeline reports mail it sent itself: clear fields on POST /events.
    const outsideId = `ext_${topic.replace(/[^A-Za-z0-9]/g, '').slice(-20)}`;
    const postEvents = async (events: unknown[]) =>
      fetch(`${tern!.url}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
    const posted = await postEvents([
      {
        id: `${outsideId}-q`,
        type: 'email.queued',
        tenantId: TENANT,
        emailId: outsideId,
        occurredAt: new Date().toISOString(),
        data: { toEmail: OUTSIDE, subject: subjectOf(OUTSIDE, 1) },
      },
    ]);
    expect(posted.status).toBe(202);
    // A provider's diagnostic and a clicked link that name the erased address, on its first email.
    const [erinFirst] = idsOf.get(ERASED)!;
    const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
    const personal = await postEvents([
      {
        id: `${erinFirst}-delay`,
        type: 'email.delayed',
        tenantId: TENANT,
        emailId: erinFirst,
        occurredAt: inMs(1000),
        data: { reason: `451 4.2.2 <${ERASED}>: mailbox over quota, try later` },
      },
      {
        id: `${erinFirst}-bounce`,
        type: 'email.bounced',
        tenantId: TENANT,
        emailId: erinFirst,
        occurredAt: inMs(1500),
        data: { bounceType: 'soft', reason: `552 5.2.2 <${ERASED}>: mailbox full` },
      },
      {
        id: `${erinFirst}-click`,
        type: 'email.clicked',
        tenantId: TENANT,
        emailId: erinFirst,
        occurredAt: inMs(2000),
        data: {
          url: `https://acme.test/preferences?email=${ERASED}`,
          userAgent: 'Mozilla/5.0 (Erin laptop)',
        },
      },
    ]);
    expect(personal.status).toBe(202);

    // Every email projected and delivered; one webhook delivery per event recorded.
    await waitFor(
      async () => {
        const logs = await logsByRecipient();
        const timeline = await api('GET', `/emails/${erinFirst}`);
        return (
          logs.meta.total === 8 &&
          logs.data.filter((e) => e.status !== 'QUEUED').length === 7 &&
          (timeline.body as unknown as { events: { type: string }[] }).events.some(
            (e) => e.type === 'email.clicked',
          )
        );
      },
      { timeoutMs: 90_000, intervalMs: 250, description: 'all emails delivered' },
    );
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE request_body IS NOT NULL AND email_id = ANY($1)',
          [idsOf.get(ERASED)],
        );
        return rows[0].n >= 9; // queued, sent, delivered × 2, delayed, bounced, clicked
      },
      // Bounds of 90 s like the split-mode waits: room for a consumer-group rebalance on a busy broker.
      { timeoutMs: 90_000, intervalMs: 250, description: 'webhook deliveries recorded' },
    );
    const before = await logsByRecipient();
    const beforeAnalytics = await analytics();
    expect(beforeAnalytics.totals).toMatchObject({ total: 8 });
    expect(await databaseText()).toContain(ERASED);
    const friendBefore = await api('GET', `/emails/${friendId}`);
    expect(friendBefore.body).toMatchObject({ cc: [ERASED, KEPT[0]], replyTo: ERASED });
    // Its wrapped data keys, as they sit in the data files of data_keys before the erasure.
    const keyring = createKeyring({ pool, encryptionKey: ENCRYPTION_KEY });
    const { rows: keyRows } = await pool.query<{ wrapped_key: Buffer }>(
      'SELECT wrapped_key FROM data_keys WHERE tenant_id = $1 AND recipient_hash = $2',
      [TENANT, keyring.recipientHash(TENANT, ERASED)],
    );
    expect(keyRows.length).toBeGreaterThanOrEqual(1);
    const wrappedKeys = keyRows.map((r) => r.wrapped_key);
    const filesBefore = await dataKeysFiles();
    for (const key of wrappedKeys) expect(filesBefore.includes(key)).toBe(true);
    expect(received.join('\n')).toContain(ERASED); // the endpoint was told (before the erasure)

    // The raw log: no address and no subject of any recipient, the outside event included.
    const raw = await rawLog();
    expect(raw).toContain('"sealed"');
    expect(raw).toContain(outsideId);
    for (const to of [...recipients, OUTSIDE]) {
      expect(raw).not.toContain(to);
      expect(raw).not.toContain(subjectOf(to, 1));
    }
    expect(raw).not.toContain('Erin laptop'); // a reader's user agent is sealed too

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
        const status = before.data.find((e) => e.id === id)!.status;
        expect(entry).toMatchObject({ toEmail: null, subject: null, status });
        const detail = await api('GET', `/emails/${id}`);
        expect(detail.status).toBe(200);
        expect(detail.body.toEmail).toBeNull();
        expect(JSON.stringify(detail.body)).not.toContain(ERASED);
        expect((await api('GET', `/emails/${id}/content`)).status).toBe(404);
      }
      // The timeline keeps the click (counted), not the URL.
      const first = (await api('GET', `/emails/${erinFirst}`)).body as unknown as {
        events: { type: string; data: Record<string, unknown> }[];
      };
      expect(first.events.find((e) => e.type === 'email.clicked')?.data).toMatchObject({ url: '[erased]' });
      // Someone else's mail keeps its recipients but the erased one.
      const friend = await api('GET', `/emails/${friendId}`);
      expect(friend.body).toMatchObject({
        toEmail: FRIEND,
        subject: FRIEND_SUBJECT,
        cc: [KEPT[0]],
        bcc: [],
        replyTo: null,
      });
      const friendContent = await api('GET', `/emails/${friendId}/content`);
      expect(friendContent.status).toBe(200);
      expect(JSON.stringify(friendContent.body)).not.toContain(ERASED);
      expect(friendContent.body).toMatchObject({ to: FRIEND, cc: [KEPT[0]] });
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
      for (const key of wrappedKeys) expect(text).not.toContain(key.toString('hex'));
      expect(text).toContain(KEPT[0]);
      expect(await analytics()).toEqual(beforeAnalytics);
      // No data file of data_keys keeps the erased wrapped keys (nor the address).
      const files = await dataKeysFiles();
      const said = () =>
        `${tern?.stdout() ?? ''}${tern?.stderr() ?? ''}`
          .split('\n')
          .filter((l) => /data_keys|erasure/.test(l))
          .join('\n');
      for (const key of wrappedKeys)
        expect(
          files.includes(key),
          `a data file of data_keys still holds an erased wrapped key; ${said()}`,
        ).toBe(false);
      expect(files.includes(Buffer.from(ERASED))).toBe(false);
    };
    await checkScrubbed();
    // An old unsubscribe link of the erased address, used after the erasure: 200, and it writes
    // no clear address back (the keyed hash already suppresses it).
    const token = createUnsubscribeToken(TRACKING_SECRET, {
      tenantId: TENANT,
      email: ERASED,
      source: 'campaign:cmp_old',
    });
    const unsubscribed = await fetch(`${tern!.url}/u/${token}`, {
      method: 'POST',
      body: 'List-Unsubscribe=One-Click',
    });
    expect(unsubscribed.status).toBe(200);
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
    // The log itself, after the rebuild: still no address, subject, diagnostic or URL in clear.
    const rawAfter = await rawLog();
    for (const text of [ERASED, subjectOf(ERASED, 1), 'mailbox full', 'preferences?email', 'Erin laptop'])
      expect(rawAfter).not.toContain(text);

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
