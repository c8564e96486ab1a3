/**
 * Ingest throughput: `POST /events` with batches of 1000 events through the real ingest app
 * (listening on 127.0.0.1) into each event log adapter; the load comes from a separate process.
 * Target (project issues): ≥ 50 000 events/s.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createKafkaEventLog, createPostgresEventLog, type EventLog } from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import pg from 'pg';
import { runTsx } from '../lib/child.js';
import { type CpuSnapshot, cpuBetween, cpuSnapshot } from '../lib/cpu.js';
import type { LoadOptions, LoadReport } from '../lib/load-generator.js';
import { type BenchResult, emitResult, type Figure } from '../lib/report.js';
import { benchEnv, createFreshDatabase, deleteTopic, runTag } from '../lib/services.js';
import { distribution, round, rssMiB } from '../lib/stats.js';

const TARGET = { op: '>=', value: 50_000 } as const;
const env = benchEnv(process.env);
const events = Number(process.env.BENCH_INGEST_EVENTS ?? 200_000);
const concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 4);
const maxSeconds = Number(process.env.BENCH_INGEST_SECONDS ?? 20);
const generatorFile = new URL('../lib/load-generator.ts', import.meta.url).pathname;

async function measure(variant: string, log: EventLog): Promise<{ figures: Figure[]; details: unknown }> {
  const token = randomBytes(24).toString('base64url');
  const app = await createIngestApp({ log, ingestToken: token });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  try {
    const opts: LoadOptions = {
      url: `http://127.0.0.1:${port}/events`,
      token,
      events,
      batchSize: 1000,
      concurrency,
      maxSeconds,
      warmupRequests: 2 * concurrency,
      tag: `ing${runTag()}`,
      endMs: Date.now(),
    };
    const generator = new Map<number, string>();
    let before: CpuSnapshot | undefined;
    let after: CpuSnapshot | undefined;
    const out = await runTsx(generatorFile, [JSON.stringify(opts)], {
      timeoutMs: (maxSeconds + 60) * 1000,
      onSpawn: (pid) => generator.set(pid, 'load generator'),
      onLine: (line) => {
        if (line.startsWith('{"phase"')) before = cpuSnapshot(generator);
        else after ??= cpuSnapshot(generator);
      },
    });
    const report = JSON.parse(out.trim().split('\n').at(-1)!) as LoadReport;
    const cpu = before && after ? cpuBetween(before, after) : {};
    const lat = distribution(report.latenciesMs);
    const rate = (report.acceptedEvents / report.elapsedMs) * 1000;
    // Whole log, warm-up included: a group that never committed counts every record.
    const inLog = await log.lag(`never-${runTag()}`);
    console.error(
      `[ingest] ${variant}: ${report.acceptedEvents} events in ${Math.round(report.elapsedMs)} ms → ${Math.round(rate)} events/s, ` +
        `p50 ${lat.p50.toFixed(1)} ms p99 ${lat.p99.toFixed(1)} ms, CPU % of a core ${JSON.stringify(cpu)}, statuses ${JSON.stringify(report.statuses)}`,
    );
    if (report.firstError) console.error(`[ingest] ${variant}: first error: ${report.firstError}`);
    const note =
      report.statuses.error || Object.keys(report.statuses).some((s) => s !== '202')
        ? 'errors: see details'
        : undefined;
    const fig = (metric: string, value: number, unit: string, extra: Partial<Figure> = {}): Figure => ({
      bench: 'ingest',
      variant,
      metric,
      value,
      unit,
      ...extra,
    });
    return {
      figures: [
        fig('throughput', rate, 'events/s', { target: TARGET, ...(note ? { note } : {}) }),
        fig('request p50 (1000 events)', lat.p50, 'ms'),
        fig('request p99 (1000 events)', lat.p99, 'ms'),
      ],
      details: {
        eventsPerSec: Math.round(rate),
        acceptedEvents: report.acceptedEvents,
        requests: report.requests,
        elapsedMs: Math.round(report.elapsedMs),
        concurrency,
        latencyMs: Object.fromEntries(Object.entries(lat).map(([k, v]) => [k, round(v, 2)])),
        statuses: report.statuses,
        recordsInLog: inLog,
        cpuPercentOfOneCore: cpu,
        ...(report.firstError ? { firstError: report.firstError } : {}),
      },
    };
  } finally {
    await app.close();
  }
}

async function kafka() {
  const topic = `tern-bench.ingest-${runTag()}`;
  const log = createKafkaEventLog({ brokers: env.kafkaBrokers, topic, partitions: 6 });
  try {
    await log.ping(); // creates the topic before the clock starts
    return await measure('kafka', log);
  } finally {
    await log.close();
    await deleteTopic(env.kafkaBrokers, topic);
  }
}

async function postgresTable() {
  const db = await createFreshDatabase(env.databaseUrl);
  const pool = new pg.Pool({ connectionString: db.url, max: 10 });
  // DROP DATABASE … WITH (FORCE) ends any connection still open; that is expected here.
  pool.on('error', () => {});
  try {
    const log = createPostgresEventLog({ pool });
    await log.ensureSchema();
    try {
      return await measure('postgres-table', log);
    } finally {
      await log.close();
    }
  } finally {
    await pool.end();
    await db.drop();
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
  bench: 'ingest',
  figures,
  details: { ...details, maxRssMiB: round(process.resourceUsage().maxRSS / 1024, 1) },
  rssMiB: rssMiB(),
  wallMs: Math.round(performance.now() - started),
};
emitResult(result);
