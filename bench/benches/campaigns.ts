/**
 * Campaigns (SPEC §15, issue 29), per log adapter, each figure next to its ceiling from the same run:
 *  - fan-out: emails/s of `createCampaignFanout` on the real send path (`outgoingMailer`: due-list
 *    rows, then email.queued) for one campaign to `BENCH_CAMPAIGN_CONTACTS` contacts (100 000),
 *    against the same number of email.queued events appended to the same log in the same chunk
 *    size, with nothing else (no contact scan, rendering, unsubscribe tokens or rows). No sender.
 *  - delivered: a campaign to `BENCH_CAMPAIGN_DELIVER_CONTACTS` contacts (10 000; the issue's
 *    figure is 100 000) from the fan-out's start until every email is DELIVERED — fan-out, sender
 *    (sandbox provider), projector, all in this process — against the same number of emails'
 *    three events (queued, sent, delivered) posted to `POST /events` (1000 events a request, 4 in
 *    flight) until all are DELIVERED, run after it. The process's memory (RSS, V8 heap, external)
 *    is sampled every 250 ms through the campaign: its peak against the process just before it
 *    (everything started and warmed by a 200-contact campaign, a full GC: idle), and after a full
 *    GC at its end (what it left referenced).
 */
import { randomBytes } from 'node:crypto';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ClickHouseClient } from '@clickhouse/client';
import { queuedEvent } from '@tern/domain';
import { createEventStream, type EventLog, type EventStream } from '@tern/event-log';
import { createCampaignFanout, outgoingMailer } from '@tern/worker';
import type pg from 'pg';
import { onKafkaLog, onPostgresTableLog, runOnLogs } from '../lib/log-variants.js';
import { figureMaker } from '../lib/report.js';
import {
  type SandboxPipeline,
  sandboxDeliveryEvents,
  startSandboxPipeline,
} from '../lib/sandbox-pipeline.js';
import { waitDelivered } from '../lib/sending.js';
import { benchEnv, runTag } from '../lib/services.js';
import { type AutovacuumLog, emulateAutovacuum } from '../lib/soak-db.js';
import { round } from '../lib/stats.js';

const env = benchEnv(process.env);
const contacts = Number(process.env.BENCH_CAMPAIGN_CONTACTS ?? 100_000);
const deliverContacts = Number(process.env.BENCH_CAMPAIGN_DELIVER_CONTACTS ?? 10_000);
const chunkSize = 500;
/** How long a delivered phase's run may take: 15 min, or 2 ms per contact beyond 450 000. */
const deliverWaitMs = Math.max(900_000, deliverContacts * 2);
const optionalNumber = (v: string | undefined) => (v ? Number(v) : undefined);
/**
 * The delivered phase runs with Postgres's autovacuum rule emulated (`on`, the default: what a
 * deployment runs; this machine's server has the launcher off), every `BENCH_CAMPAIGN_NAPTIME`
 * seconds (60, Postgres's `autovacuum_naptime`); `off` measures the server as it is here.
 */
const vacuum = (process.env.BENCH_CAMPAIGN_VACUUM ?? 'on') === 'on';
const naptimeS = Number(process.env.BENCH_CAMPAIGN_NAPTIME ?? 60);
/** Prints the process's memory every second of the campaign (stderr). */
const trace = process.env.BENCH_CAMPAIGN_MEMORY_TRACE === '1';
const SECRET = randomBytes(24).toString('base64url');

async function addAudience(pool: pg.Pool, tenantId: string, n: number): Promise<void> {
  await pool.query(
    `INSERT INTO contacts (tenant_id, id, email, first_name, audiences, created_at, updated_at)
     SELECT $1, 'ct_' || lpad(g::text, 24, '0'), 'reader' || g || '@example.com', 'R' || g, ARRAY['bench'],
            now() - interval '1 minute', now() - interval '1 minute'
       FROM generate_series(1, $2::int) g`,
    [tenantId, n],
  );
  await pool.query('ANALYZE contacts');
}

async function addCampaign(pool: pg.Pool, tenantId: string, id: string): Promise<void> {
  await pool.query(
    `INSERT INTO campaigns (tenant_id, id, name, from_address, audience, subject, text, status, created_at, updated_at)
     VALUES ($1, $2, 'Bench', 'Acme <news@acme.test>', 'bench', 'Hello {{firstName}}', 'We launched.', 'sending', now(), now())`,
    [tenantId, id],
  );
}

const fanoutOf = (pool: pg.Pool, log: EventStream) =>
  createCampaignFanout({
    pool,
    mailer: outgoingMailer(pool, log),
    now: () => new Date(),
    chunkSize,
  });

/** The fan-out alone against the log alone. */
async function fanoutPhase(pool: pg.Pool, log: EventStream) {
  const tenantId = `bench-campaigns-${runTag()}`;
  await addAudience(pool, tenantId, contacts);
  const at = new Date();
  const ceilingStart = performance.now();
  for (let i = 0; i < contacts; i += chunkSize) {
    const events = [];
    for (let j = i; j < Math.min(contacts, i + chunkSize); j++) {
      events.push(
        queuedEvent({
          tenantId,
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
  await addCampaign(pool, tenantId, id);
  const fanout = fanoutOf(pool, log);
  const started = performance.now();
  const emails = await fanout.runOnce();
  const fanoutS = (performance.now() - started) / 1000;
  await fanout.stop();
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM bulk_emails WHERE tenant_id = $1 AND source = $2',
    [tenantId, `campaign:${id}`],
  );
  if (emails !== contacts || rows[0]!.n !== contacts)
    throw new Error(`fan-out handed ${emails} emails, ${rows[0]!.n} rows, for ${contacts} contacts`);
  return { rate: contacts / fanoutS, ceiling: contacts / ceilingS, fanoutS, ceilingS };
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/** The process's memory in MiB: RSS, V8 heap (used, reserved), external (Buffers and other off-heap). */
function memory() {
  const m = process.memoryUsage();
  return { rss: mib(m.rss), heap: mib(m.heapUsed), heapTotal: mib(m.heapTotal), external: mib(m.external) };
}

type Memory = ReturnType<typeof memory>;

/**
 * V8's last-resort collection (full collections until nothing more is freed, then the heap's free
 * pages given back), so "idle" is the settled process rather than one carrying whatever garbage
 * the steps before left (up to ~300 MiB of V8 heap after a ceiling run: bench/README.md) or the
 * pages V8 had not given back yet: a plain full collection left 130 MiB of reserved heap at "idle"
 * after a short audience's set-up, and none after a long one (V8's memory reducer had run).
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as (o: object) => void)({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** V8's collections by kind (Node's `gc` performance entries): count and total pause, ms. */
type GcTotals = Record<'minor' | 'major' | 'incremental' | 'weakcb', { n: number; ms: number }>;
const GC_KINDS: Record<number, keyof GcTotals> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * Memory sampled every 250 ms until `stop()`: the peak of each figure (not necessarily at once),
 * and the collections' pauses in the meantime.
 */
function sampleMemory() {
  const gc: GcTotals = {
    minor: { n: 0, ms: 0 },
    major: { n: 0, ms: 0 },
    incremental: { n: 0, ms: 0 },
    weakcb: { n: 0, ms: 0 },
  };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[(e as unknown as { detail: { kind: number } }).detail.kind];
      if (kind) {
        gc[kind].n++;
        gc[kind].ms += e.duration;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const peak = memory();
  const take = () => {
    const m = memory();
    for (const k of Object.keys(peak) as (keyof Memory)[]) peak[k] = Math.max(peak[k], m[k]);
  };
  let n = 0;
  const timer = setInterval(() => {
    take();
    if (trace && ++n % 4 === 0) console.error('[campaigns] memory (MiB)', JSON.stringify(memory()));
  }, 250);
  return {
    stop(): { peak: Memory; gc: GcTotals } {
      clearInterval(timer);
      observer.disconnect();
      take();
      return { peak, gc };
    },
  };
}

/** A campaign to `n` contacts until all are DELIVERED, memory sampled through it. */
async function campaignRun(pool: pg.Pool, log: EventStream, tag: string, n: number) {
  const tenantId = `bench-deliver-${tag}`;
  await addAudience(pool, tenantId, n);
  const id = `cmp_deliver${tag}`;
  await addCampaign(pool, tenantId, id);
  const fanout = fanoutOf(pool, log);
  collectGarbage();
  const idle = memory();
  const sampled = sampleMemory();
  const started = performance.now();
  const emails = await fanout.runOnce();
  const fannedS = (performance.now() - started) / 1000;
  await fanout.stop();
  if (emails !== n) throw new Error(`fan-out handed ${emails} emails for ${n}`);
  if (!(await waitDelivered(pool, tenantId, null, n, { intervalMs: 50, timeoutMs: deliverWaitMs })))
    throw new Error(`campaign not DELIVERED within ${deliverWaitMs / 60_000} min`);
  const deliveredS = (performance.now() - started) / 1000;
  const { peak, gc } = sampled.stop();
  // What the campaign left behind: the heap after a full collection is what is still referenced.
  collectGarbage();
  const after = memory();
  return { deliveredS, fannedS, idle, peak, after, gc };
}

/** The campaign's emails' three events each through POST /events, 1000 a request, 4 in flight. */
async function ceilingRun(pool: pg.Pool, pipeline: SandboxPipeline, tag: string): Promise<number> {
  const ceilingTenant = `bench-deliver-ceiling-${tag}`;
  const perRequest = Math.floor(1000 / 3);
  const ceilingStart = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = next; i < deliverContacts; i = next) {
        next += perRequest;
        const events = [];
        for (let j = i; j < Math.min(deliverContacts, i + perRequest); j++) {
          events.push(
            ...sandboxDeliveryEvents(ceilingTenant, `em_dceil${tag}${j}`, {
              toEmail: `reader${j}@example.com`,
              subject: `Hello R${j}`,
            }),
          );
        }
        await pipeline.postEvents(events);
      }
    }),
  );
  if (
    !(await waitDelivered(pool, ceilingTenant, null, deliverContacts, {
      intervalMs: 50,
      timeoutMs: deliverWaitMs,
    }))
  )
    throw new Error(`ceiling run not DELIVERED within ${deliverWaitMs / 60_000} min`);
  return (performance.now() - ceilingStart) / 1000;
}

/**
 * A campaign to `deliverContacts` contacts → all DELIVERED, then (its ceiling) their events through
 * POST /events. The campaign goes first, so its idle is the pipeline just started (and warmed by a
 * 200-contact campaign), not a heap the ceiling run filled; both then run warm.
 */
async function deliveredPhase(pool: pg.Pool, ch: ClickHouseClient, log: EventStream) {
  const tag = runTag();
  const pipeline = await startSandboxPipeline({
    bench: 'campaigns',
    tag,
    pool,
    ch,
    log,
    trackingSecret: SECRET,
  });
  const vacuums: AutovacuumLog = { vacuums: 0, analyzes: 0, ms: 0, tables: {} };
  const stopVacuum = vacuum ? emulateAutovacuum(pool, naptimeS, vacuums) : async () => {};
  try {
    await campaignRun(pool, log, `${tag}w`, Math.min(200, deliverContacts));
    const campaign = await campaignRun(pool, log, tag, deliverContacts);
    const ceilingS = await ceilingRun(pool, pipeline, tag);
    return { ...campaign, ceilingS, idleRss: campaign.idle.rss, peakRss: campaign.peak.rss, vacuums };
  } finally {
    await stopVacuum();
    await pipeline.stop();
  }
}

async function measure(
  variant: 'postgres-table' | 'kafka',
  raw: EventLog,
  pool: pg.Pool,
  ch: ClickHouseClient,
) {
  const log = createEventStream(raw);
  const f = await fanoutPhase(pool, log);
  console.error(
    `[campaigns] ${variant}: fan-out of ${contacts} contacts in ${f.fanoutS.toFixed(1)} s = ${f.rate.toFixed(0)} emails/s; ` +
      `ceiling (append only) ${f.ceiling.toFixed(0)} events/s; ratio ${(f.rate / f.ceiling).toFixed(2)}`,
  );
  const d = await deliveredPhase(pool, ch, log);
  console.error(
    `[campaigns] ${variant}: ${deliverContacts} contacts → all DELIVERED in ${d.deliveredS.toFixed(1)} s ` +
      `(fanned out in ${d.fannedS.toFixed(1)} s); their events through POST /events ${d.ceilingS.toFixed(1)} s ` +
      `(${(d.deliveredS / d.ceilingS).toFixed(2)}×); RSS idle ${d.idleRss.toFixed(0)} MiB, peak ${d.peakRss.toFixed(0)} MiB ` +
      `(+${(d.peakRss - d.idleRss).toFixed(0)}); heap ${d.idle.heap.toFixed(0)} → ${d.peak.heap.toFixed(0)}, ` +
      `reserved ${d.idle.heapTotal.toFixed(0)} → ${d.peak.heapTotal.toFixed(0)}, ` +
      `external ${d.idle.external.toFixed(0)} → ${d.peak.external.toFixed(0)} MiB; after a full GC: ` +
      `RSS ${d.after.rss.toFixed(0)}, heap ${d.after.heap.toFixed(0)} MiB; autovacuum ` +
      (vacuum
        ? `emulated every ${naptimeS} s: ${d.vacuums.vacuums} vacuums, ${d.vacuums.analyzes} analyzes, ${(d.vacuums.ms / 1000).toFixed(1)} s`
        : 'off') +
      `; GC pauses ${(['minor', 'major', 'incremental', 'weakcb'] as const).map((k) => `${k} ${d.gc[k].n}× ${(d.gc[k].ms / 1000).toFixed(1)} s`).join(', ')}`,
  );
  const fig = figureMaker('campaigns', variant);
  return {
    figures: [
      fig(`fan-out ${contacts} contacts`, f.rate, 'emails/s'),
      fig('ceiling: append only', f.ceiling, 'events/s'),
      fig('fan-out / ceiling', f.rate / f.ceiling, 'ratio'),
      fig(`campaign of ${deliverContacts} → all DELIVERED (sandbox)`, d.deliveredS, 's'),
      fig(`ceiling: their events via POST /events → all DELIVERED`, d.ceilingS, 's'),
      fig('campaign / ceiling (time)', d.deliveredS / d.ceilingS, '×', { op: '<=', value: 2 }),
      fig('emails DELIVERED/s of the campaign', deliverContacts / d.deliveredS, '/s'),
      fig('RSS before the campaign (idle)', d.idleRss, 'MiB'),
      fig('RSS peak during the campaign', d.peakRss, 'MiB'),
      fig('RSS peak − idle', d.peakRss - d.idleRss, 'MiB', { op: '<=', value: 143 }),
      fig('V8 heap used peak − idle', d.peak.heap - d.idle.heap, 'MiB'),
      fig('external (Buffers) peak − idle', d.peak.external - d.idle.external, 'MiB'),
      fig('V8 heap used after, full GC − idle', d.after.heap - d.idle.heap, 'MiB'),
    ],
    details: {
      contacts,
      deliverContacts,
      chunkSize,
      fanoutS: round(f.fanoutS, 2),
      ceilingS: round(f.ceilingS, 2),
      delivered: {
        deliveredS: round(d.deliveredS, 2),
        fannedS: round(d.fannedS, 2),
        ceilingS: round(d.ceilingS, 2),
        idleRssMiB: round(d.idleRss, 1),
        peakRssMiB: round(d.peakRss, 1),
        idleMiB: d.idle,
        peakMiB: d.peak,
        afterGcMiB: d.after,
      },
    },
  };
}

await runOnLogs({
  bench: 'campaigns',
  defaultLogs: 'kafka,postgres',
  postgres: (ch) => onPostgresTableLog(env, ch, measure, { logPoolMax: 4, pollIntervalMs: 100 }),
  kafka: (ch) =>
    onKafkaLog(env, ch, measure, {
      topicPrefix: 'tern-bench.campaigns',
      partitionConcurrency: 2,
      fetchMaxBytesPerPartition: optionalNumber(process.env.BENCH_KAFKA_FETCH_PARTITION_BYTES),
      fetchMaxBytes: optionalNumber(process.env.BENCH_KAFKA_FETCH_BYTES),
    }),
});
