/**
 * Postgres work per email (issue 45, item 2): statements, rows written, HOT updates and WAL bytes
 * one email costs through to DELIVERED and its webhook delivery (bench/README.md). Two phases on
 * one database, the whole path in this process, started fresh and stopped at the phase's end (so
 * every backend's table counters are flushed): transactional (`POST /emails/send`, SMTP to an
 * in-process sink, `email.delivered` posted to `POST /events` once the log row is SENT, projector,
 * dispatcher to a loopback endpoint subscribed to `email.delivered`) and campaign (the fan-out,
 * then the same). On a Postgres server of its own (`pg_stat_statements` preloaded, nothing else
 * writing its WAL); `BENCH_PGWORK_SERVER=shared` uses DATABASE_URL (client-side counts only; WAL
 * includes other sessions'). The log is Kafka; `BENCH_PGWORK_LOG=postgres` puts it in a table of
 * the same database, counted too. The pollers' statements grow with a phase's length.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signDashboardToken } from '@tern/auth';
import { createDispatcher } from '@tern/dispatcher';
import {
  createEventStream,
  createKafkaEventLog,
  createPostgresEventLog,
  type EventLog,
} from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { createProjector } from '@tern/projector';
import { ensureLogDays, isSuppressed, suppressedAmong } from '@tern/read-models';
import { createSender, createSmtpProvider } from '@tern/sender';
import { migratePostgres } from '@tern/stores';
import { getTemplate } from '@tern/templates';
import { createSecretBox, generateWebhookSecret, insertEndpoint } from '@tern/webhooks';
import { createCampaignFanout, outgoingMailer } from '@tern/worker';
import pg from 'pg';
import { startDedicatedPostgres } from '../../test/faults/servers.js';
import { createNamedDatabase } from '../../test/support/services.js';
import {
  countClientStatements,
  countsOf,
  enableStatements,
  observerPool,
  onOwnConnection,
  reportPhase,
  snapshot,
  takeClientCounts,
} from '../lib/pg-work.js';
import { BENCH_LOG_DAYS, logDaysFrom, openChdb } from '../lib/projection-stores.js';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { startSink } from '../lib/send-dkim.js';
import { postJson } from '../lib/sending.js';
import { listenSendingApi } from '../lib/sending-api.js';
import { benchEnv, deleteTopic, pollUntil, runTag } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';

const env = benchEnv(process.env);
const txEmails = Number(process.env.BENCH_PGWORK_EMAILS ?? 500);
const campaignEmails = Number(process.env.BENCH_PGWORK_CAMPAIGN ?? 500);
/** Emails each phase's tenant already sent before the phase (`historySetup`). */
const history = Number(process.env.BENCH_PGWORK_HISTORY ?? 0);
// Sends in flight in the transactional phase: the statements per email fall as batches fill.
const inFlight = Number(process.env.BENCH_PGWORK_IN_FLIGHT ?? 8);
if (!(Number.isInteger(inFlight) && inFlight >= 1))
  throw new Error('BENCH_PGWORK_IN_FLIGHT must be an integer ≥ 1');
const ownServer = process.env.BENCH_PGWORK_SERVER !== 'shared';
const logKind = process.env.BENCH_PGWORK_LOG === 'postgres' ? 'postgres' : 'kafka';
const SECRET = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const tag = runTag();
const wallStart = performance.now();
countClientStatements();

const server = ownServer
  ? await startDedicatedPostgres({
      settings: [
        "shared_preload_libraries = 'pg_stat_statements'",
        'max_connections = 100',
        // e.g. `wal_compression = lz4` (what a setting does to the WAL per email); `;` between lines.
        ...(process.env.BENCH_PGWORK_PG_SETTINGS ?? '').split(';').filter((l) => l.trim() !== ''),
      ],
    })
  : null;
const adminUrl = server?.url ?? env.databaseUrl;
const db = await createNamedDatabase(adminUrl, `tern_bench_pgwork_${tag}`);
// The bench's own statements run as another role, so pg_stat_statements tells them apart.
const OBSERVER_ROLE = 'tern_pgwork_observer';
const observerUrl = new URL(db.url);
if (server) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE ROLE ${OBSERVER_ROLE} LOGIN SUPERUSER`);
  await admin.end();
  observerUrl.username = OBSERVER_ROLE;
}
const observer = observerPool(observerUrl.toString());
const chdb = await openChdb();
const sink = await startSink();
const topic = `tern-bench.pgwork-${tag}`;
const groups = ['projector', 'sender', 'dispatcher'].map((g) => `tern-bench.pgwork-${g}-${tag}`);

// Webhook receiver: answers 200 and counts.
let received = 0;
const hooks = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', () => r()));
const hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
const box = createSecretBox(`bench-${tag}-webhook-secrets-key`);

{
  const setup = new pg.Pool({ connectionString: db.url, max: 2 });
  await migratePostgres(setup);
  // The days a deployed log holds (the worker's retention job makes them; it does not run here).
  if (BENCH_LOG_DAYS > 0) await ensureLogDays(setup, logDaysFrom(BENCH_LOG_DAYS), BENCH_LOG_DAYS);
  // The catalog rows the migrations and the days left dead are pruned now, not by the first phase's
  // reads after its CHECKPOINT (a full-page image of each page: ≈ 1.1 MB of pg_attribute and
  // pg_class with 94 days made, ≈ 2.2 kB per email of a 500-email phase — a deployment makes a day a day).
  await setup.query('VACUUM');
  await setup.end();
}
const serverCounts = await enableStatements(observer);

/** The path of one phase, all in this process, on a fresh pool (ended at the phase's end). */
async function startPath() {
  const pool = new pg.Pool({ connectionString: db.url, max: 20 });
  pool.on('error', () => {});
  let raw: EventLog;
  // As `npm start` opens it (services/tern src/stores.ts): two partitions folded side by side.
  if (logKind === 'kafka')
    raw = createKafkaEventLog({ brokers: env.kafkaBrokers, topic, partitions: 6, partitionConcurrency: 2 });
  else {
    const table = createPostgresEventLog({ pool, pollIntervalMs: 100 });
    await table.ensureSchema();
    raw = table;
  }
  const log = createEventStream(raw);
  const projector = createProjector({ pool, ch: chdb.ch, log, group: groups[0]! });
  const sender = createSender({
    pool,
    log,
    group: groups[1]!,
    provider: createSmtpProvider({ url: sink.url }),
    isSuppressed,
    suppressedAmong,
    getTemplate,
    tracking: { secret: SECRET, publicUrl: 'http://127.0.0.1:3000' },
  });
  const dispatcher = createDispatcher({ pool, log, group: groups[2]!, secretBox: box, allowPrivate: true });
  await projector.start();
  await sender.start();
  await dispatcher.start();
  const { api, url: apiUrl } = await listenSendingApi({ pool, ch: chdb.ch, log, secret: SECRET });
  const ingest = await createIngestApp({ log, ingestToken: INGEST_TOKEN });
  await ingest.listen({ host: '127.0.0.1', port: 0 });
  const base = (app: { server: { address(): unknown } }) =>
    `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    pool,
    log,
    apiUrl,
    eventsUrl: `${base(ingest)}/events`,
    async stop() {
      await api.close();
      await ingest.close();
      await dispatcher.stop();
      await sender.stop();
      await projector.stop();
      await log.close();
      await pool.end();
    },
  };
}
type Path = Awaited<ReturnType<typeof startPath>>;

/** The tenant's rows a phase made: its history is a day older at least. */
const FRESH = `created_at > now() - interval '1 day'`;

/** Posts each email's `email.delivered` once its log row is SENT, until all `n` are DELIVERED. */
async function feedback(path: Path, tenantId: string, n: number): Promise<void> {
  const posted = new Set<string>();
  const done = await pollUntil(
    async () => {
      const { rows } = await observer.query<{ id: string; status: string }>(
        `SELECT id, status FROM email_logs WHERE tenant_id = $1 AND status IN ('SENT', 'DELIVERED') AND ${FRESH}`,
        [tenantId],
      );
      const fresh = rows.filter((r) => r.status === 'SENT' && !posted.has(r.id)).map((r) => r.id);
      for (let i = 0; i < fresh.length; i += 500) {
        const events = fresh.slice(i, i + 500).map((emailId) => ({
          id: `${emailId}:delivered`,
          type: 'email.delivered',
          tenantId,
          emailId,
          occurredAt: new Date().toISOString(),
        }));
        await postJson(path.eventsUrl, { events }, { authorization: `Bearer ${INGEST_TOKEN}` });
      }
      for (const id of fresh) posted.add(id);
      return rows.filter((r) => r.status === 'DELIVERED').length >= n;
    },
    { intervalMs: 200, timeoutMs: 300_000 },
  );
  if (!done) throw new Error(`${tenantId}: not all ${n} emails DELIVERED within 5 min`);
}

/** Waits until `n` webhook deliveries of the tenant are recorded delivered. */
async function webhooksDelivered(tenantId: string, n: number): Promise<void> {
  const ok = await pollUntil(
    async () => {
      const { rows } = await observer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1 AND status = 'delivered' AND ${FRESH}`,
        [tenantId],
      );
      return rows[0]!.n >= n;
    },
    { intervalMs: 200, timeoutMs: 120_000 },
  );
  if (!ok) throw new Error(`${tenantId}: ${n} webhook deliveries not recorded within 2 min`);
}

async function addEndpoint(db: pg.Client, tenantId: string): Promise<void> {
  await insertEndpoint(
    db,
    tenantId,
    {
      id: `wh_${tenantId}`,
      url: hookUrl,
      events: ['email.delivered'],
      description: null,
      secretEnc: box.encrypt(generateWebhookSecret()),
    },
    new Date(),
  );
}

async function transactional(path: Path, tenantId: string, n: number): Promise<void> {
  const auth = {
    authorization: `Bearer ${signDashboardToken({ secret: SECRET, tenantId, role: 'owner', expiresInSeconds: 3600 })}`,
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        const i = next++;
        await postJson(
          `${path.apiUrl}/emails/send`,
          {
            from: 'Acme <bench@acme.test>',
            to: `user${i}@example.com`,
            subject: `Your receipt ${i}`,
            html: `<p>Receipt ${i} <a href="https://example.com/r/${i}">view</a></p>`,
          },
          auth,
        );
      }
    }),
  );
}

async function campaign(path: Path, n: number): Promise<void> {
  const fanout = createCampaignFanout({
    pool: path.pool,
    mailer: outgoingMailer(path.pool, path.log),
    now: () => new Date(),
    chunkSize: 500,
  });
  const emails = await fanout.runOnce();
  await fanout.stop();
  if (emails !== n) throw new Error(`fan-out handed ${emails} emails for ${n}`);
}

/** Contacts and the campaign row, written before the phase's counters start. */
async function campaignSetup(db: pg.Client, tenantId: string, n: number): Promise<void> {
  await db.query(
    `INSERT INTO contacts (tenant_id, id, email, first_name, audiences, created_at, updated_at)
     SELECT $1, 'ct_' || lpad(g::text, 24, '0'), 'reader' || g || '@example.com', 'R' || g, ARRAY['bench'],
            now() - interval '1 minute', now() - interval '1 minute'
       FROM generate_series(1, $2::int) g`,
    [tenantId, n],
  );
  await db.query(
    `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, subject, text, status, created_at, updated_at)
     VALUES ($1, $2, 'Bench', 'Acme <news@acme.test>', 'bench', 'Hello {{firstName}}', 'We launched.', 'sending', now(), now())`,
    [tenantId, `cmp_${tenantId}`],
  );
  await db.query('ANALYZE contacts');
}

/**
 * `n` emails the tenant sent before, each delivered with its webhook delivered: rows in the tables
 * one email writes, keyed as those are (ids of 24 random base62-like characters, as every email id
 * was before 2026-12-06; their events and Message-ID named after them), then vacuumed: each index
 * keyed by email id is as large as such a tenant's, and autovacuum has nothing to do in the phase.
 */
async function historySetup(db: pg.Client, tenantId: string, n: number): Promise<void> {
  // A utility statement takes no parameters; `n` is a number.
  await db.query(
    `CREATE TEMP TABLE history_ids AS
     SELECT 'em_' || substr(translate(encode(decode(md5(random()::text || g) || md5(g || random()::text), 'hex'),
                                             'base64'), '+/', 'Xy'), 1, 24) AS id,
            now() - interval '30 days' + g * interval '1 second' AS at
       FROM generate_series(1, ${Math.trunc(n)}) g`,
  );
  const t = [tenantId];
  await db.query(
    `INSERT INTO outgoing_emails (tenant_id, id, state, due_at, message, created_at, updated_at)
     SELECT $1, id, 'done', at, '{}', at, at FROM history_ids`,
    t,
  );
  await db.query(
    `INSERT INTO email_logs (tenant_id, id, to_email, subject, status, created_at, state, updated_at)
     SELECT $1, id, 'reader@example.com', 'Before', 'DELIVERED', at, '{}', at FROM history_ids`,
    t,
  );
  const events = `FROM history_ids, unnest(ARRAY['queued', 'sent', 'delivered']) WITH ORDINALITY AS e(kind, k)`;
  await db.query(
    `INSERT INTO email_events (tenant_id, email_id, event_id, type, occurred_at, data)
     SELECT $1, id, id || ':' || kind, 'email.' || kind, at, '{}' ${events}`,
    t,
  );
  await db.query(
    `INSERT INTO event_stream (tenant_id, seq, event_id, email_id, type, recorded_at, payload)
     SELECT $1, row_number() OVER (), id || ':' || kind, id, 'email.' || kind, at, '{}' ${events}`,
    t,
  );
  await db.query(
    `INSERT INTO event_stream_heads (tenant_id, last_seq) VALUES ($1, (SELECT count(*) FROM event_stream WHERE tenant_id = $1))`,
    t,
  );
  await db.query(
    `INSERT INTO provider_messages (message_id, tenant_id, email_id, sent_at)
     SELECT id || '@acme.test', $1, id, at FROM history_ids`,
    t,
  );
  await db.query(
    `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, email_id, event, status,
                                     attempts, next_attempt_at, created_at, updated_at)
     SELECT $1, $2, id || ':delivered', 'email.delivered', id, '{}', 'delivered', 1, at, at, at FROM history_ids`,
    [tenantId, `wh_${tenantId}`],
  );
  await db.query('DROP TABLE history_ids');
  for (const table of [
    'outgoing_emails',
    'email_logs',
    'email_events',
    'event_stream',
    'provider_messages',
    'webhook_deliveries',
  ])
    await db.query(`VACUUM (ANALYZE, FREEZE) ${table}`);
}

const figures: Figure[] = [];
const details: Record<string, unknown> = {
  txEmails,
  campaignEmails,
  history,
  ownServer,
  log: logKind,
  logDays: BENCH_LOG_DAYS,
  serverCounts,
};

/** One phase: counters before, the path started, the emails sent through, the path stopped, counters after. */
async function phase(name: 'transactional' | 'campaign', n: number): Promise<void> {
  const tenantId = `pgw${name.slice(0, 2)}${tag}`;
  await onOwnConnection(observerUrl.toString(), async (c) => {
    await addEndpoint(c, tenantId);
    if (history > 0) await historySetup(c, tenantId, history);
    if (name === 'campaign') await campaignSetup(c, tenantId, n);
  });
  // Each phase starts right after a checkpoint: the full-page images it writes are its own.
  await observer.query('CHECKPOINT');
  if (serverCounts) await observer.query('SELECT pg_stat_statements_reset()');
  takeClientCounts();
  const before = await snapshot(observer);
  const started = performance.now();
  const path = await startPath();
  const receivedBefore = received;
  try {
    if (name === 'transactional') await transactional(path, tenantId, n);
    else await campaign(path, n);
    await feedback(path, tenantId, n);
    await webhooksDelivered(tenantId, n);
  } finally {
    await path.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  // Backends flush their table counters as they exit (the pool ended above).
  await new Promise((r) => setTimeout(r, 1500));
  const after = await snapshot(observer);
  const counted = await countsOf(observer, { before, after, serverCounts, role: 'postgres' });
  const { figures: f, details: d } = reportPhase(name, n, counted, {
    variant: `${name} (${logKind} log)`,
    walNote: ownServer ? '' : ' (shared server: other sessions too)',
  });
  figures.push(...f);
  if (received - receivedBefore < n)
    console.error(`[pgwork] ${name}: only ${received - receivedBefore} hooks`);
  details[name] = { seconds: round(seconds, 1), ...d };
}

try {
  await phase('transactional', txEmails);
  await phase('campaign', campaignEmails);
  const result: BenchResult = {
    bench: 'pgwork',
    figures,
    details,
    rssMiB: rssMiB(),
    wallMs: performance.now() - wallStart,
  };
  emitResult(result);
} finally {
  await new Promise<void>((r) => hooks.close(() => r()));
  await sink.close();
  await chdb.close();
  await observer.end().catch(() => {});
  await db.drop().catch(() => {});
  await server?.destroy();
  if (logKind === 'kafka') await deleteTopic(env.kafkaBrokers, topic, groups);
}
