/**
 * Campaign fan-out (SPEC §15): emails/s of `createCampaignFanout` on the real send path
 * (`outgoingMailer`: due-list rows, then email.queued) for one campaign to a 100 000-contact
 * audience (BENCH_CAMPAIGN_CONTACTS), per log adapter, next to its ceiling from the same run: the
 * same number of email.queued events appended to the same log in the same chunk size, with nothing
 * else (no contact scan, rendering, unsubscribe tokens, bulk_emails or outgoing_emails rows). No
 * sender runs: this is the fan-out, not the provider.
 */
import { randomBytes } from 'node:crypto';
import { createCampaignFanout, outgoingMailer } from '@tern/api';
import { queuedEvent } from '@tern/domain';
import {
  createEventStream,
  createKafkaEventLog,
  createPostgresEventLog,
  type EventLog,
} from '@tern/event-log';
import pg from 'pg';
import { openProjectionDatabase } from '../lib/projection-stores.js';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { benchEnv, deleteTopic, runTag } from '../lib/services.js';
import { round, rssMiB } from '../lib/stats.js';

const env = benchEnv(process.env);
const contacts = Number(process.env.BENCH_CAMPAIGN_CONTACTS ?? 100_000);
const chunkSize = 500;
const SECRET = randomBytes(24).toString('base64url');
const TENANT = 'bench-campaigns';

async function measure(variant: string, raw: EventLog, pool: pg.Pool) {
  const log = createEventStream(raw);
  await pool.query(
    `INSERT INTO contacts (tenant_id, id, email, first_name, audiences, created_at, updated_at)
     SELECT $1, 'ct_' || lpad(g::text, 24, '0'), 'reader' || g || '@example.com', 'R' || g, ARRAY['bench'],
            now() - interval '1 minute', now() - interval '1 minute'
       FROM generate_series(1, $2::int) g`,
    [TENANT, contacts],
  );
  await pool.query('ANALYZE contacts');

  // Ceiling: the log alone, same events, same chunks.
  const at = new Date();
  const ceilingStart = performance.now();
  for (let i = 0; i < contacts; i += chunkSize) {
    const events = [];
    for (let j = i; j < Math.min(contacts, i + chunkSize); j++) {
      events.push(
        queuedEvent({
          tenantId: TENANT,
          emailId: `em_ceiling${String(j).padStart(24, '0')}`,
          at,
          toEmail: `reader${j}@example.com`,
          from: 'Acme <news@acme.test>',
          subject: `Hello R${j}`,
          tags: ['campaign:cmp_ceiling'],
        }),
      );
    }
    await log.append(events);
  }
  const ceilingS = (performance.now() - ceilingStart) / 1000;

  const id = `cmp_bench${runTag()}`;
  await pool.query(
    `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, subject, text, status, created_at, updated_at)
     VALUES ($1, $2, 'Bench', 'Acme <news@acme.test>', 'bench', 'Hello {{firstName}}', 'We launched.', 'sending', now(), now())`,
    [TENANT, id],
  );
  const fanout = createCampaignFanout({
    pool,
    mailer: outgoingMailer(pool, log),
    now: () => new Date(),
    publicUrl: 'http://127.0.0.1:3000',
    trackingSecret: SECRET,
    chunkSize,
  });
  const started = performance.now();
  const emails = await fanout.runOnce();
  const fanoutS = (performance.now() - started) / 1000;
  await fanout.stop();
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM bulk_emails WHERE tenant_id = $1 AND source = $2',
    [TENANT, `campaign:${id}`],
  );
  if (emails !== contacts || rows[0]!.n !== contacts)
    throw new Error(`fan-out handed ${emails} emails, ${rows[0]!.n} rows, for ${contacts} contacts`);
  const rate = contacts / fanoutS;
  const ceiling = contacts / ceilingS;
  console.error(
    `[campaigns] ${variant}: ${contacts} contacts in ${fanoutS.toFixed(1)} s = ${rate.toFixed(0)} emails/s; ` +
      `ceiling (append only) ${ceiling.toFixed(0)} events/s; ratio ${(rate / ceiling).toFixed(2)}`,
  );
  const fig = (metric: string, value: number, unit: string): Figure => ({
    bench: 'campaigns',
    variant,
    metric,
    value,
    unit,
  });
  return {
    figures: [
      fig(`fan-out ${contacts} contacts`, rate, 'emails/s'),
      fig('ceiling: append only', ceiling, 'events/s'),
      fig('fan-out / ceiling', rate / ceiling, 'ratio'),
    ],
    details: { contacts, chunkSize, fanoutS: round(fanoutS, 2), ceilingS: round(ceilingS, 2) },
  };
}

async function kafka() {
  const topic = `tern-bench.campaigns-${runTag()}`;
  const log = createKafkaEventLog({ brokers: env.kafkaBrokers, topic, partitions: 6 });
  const store = await openProjectionDatabase(env.databaseUrl);
  try {
    await log.ping();
    return await measure('kafka', log, store.pool);
  } finally {
    await log.close();
    await store.close();
    await deleteTopic(env.kafkaBrokers, topic);
  }
}

async function postgresTable() {
  const store = await openProjectionDatabase(env.databaseUrl);
  const logPool = new pg.Pool({ connectionString: store.db.url, max: 4 });
  logPool.on('error', () => {});
  const log = createPostgresEventLog({ pool: logPool });
  try {
    await log.ensureSchema();
    return await measure('postgres-table', log, store.pool);
  } finally {
    await log.close();
    await logPool.end().catch(() => {});
    await store.close();
  }
}

const started = performance.now();
const which = (process.env.BENCH_LOGS ?? 'kafka,postgres').split(',');
const figures: Figure[] = [];
const details: Record<string, unknown> = {};
if (which.includes('kafka')) {
  const r = await kafka();
  figures.push(...r.figures);
  details.kafka = r.details;
}
if (which.includes('postgres')) {
  const r = await postgresTable();
  figures.push(...r.figures);
  details.postgresTable = r.details;
}
const result: BenchResult = {
  bench: 'campaigns',
  figures,
  details: { ...details, maxRssMiB: round(process.resourceUsage().maxRSS / 1024, 1) },
  rssMiB: rssMiB(),
  wallMs: Math.round(performance.now() - started),
};
emitResult(result);
