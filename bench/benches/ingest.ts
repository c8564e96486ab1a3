/**
 * Ingest throughput: `POST /events` with batches of 1000 events through the real ingest app
 * (listening on 127.0.0.1) into each event log adapter; the load comes from a separate process.
 * Each adapter plain, and `sealed` as servers mode and `npm start` run it (email.queued's personal
 * fields sealed before the log sees them, SPEC §14); the scale-out variant is sealed.
 * Target (project issues): ≥ 50 000 events/s, or ≥ 80 % of the log's own ceiling.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  createEventStream,
  createKafkaEventLog,
  createPostgresEventLog,
  type EventLog,
  type EventStream,
} from '@tern/event-log';
import { createIngestApp } from '@tern/ingest';
import { runTsx, startTsx } from '../lib/child.js';
import { type CpuSnapshot, cpuBetween, cpuMicrosPer, cpuSnapshot } from '../lib/cpu.js';
import { ingestStages } from '../lib/cpu-stages.js';
import { fillLog, generateTraffic } from '../lib/events.js';
import type { LoadOptions, LoadReport } from '../lib/load-generator.js';
import { openProjectionDatabase } from '../lib/projection-stores.js';
import { emitMeasured, type Figure, withPeakRss } from '../lib/report.js';
import { sealedAsRuntime } from '../lib/sealing.js';
import { benchEnv, deleteTopic, runTag } from '../lib/services.js';
import { distribution, round } from '../lib/stats.js';

const TARGET = { op: '>=', value: 50_000 } as const;
const env = benchEnv(process.env);
const events = Number(process.env.BENCH_INGEST_EVENTS ?? 200_000);
const concurrency = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 4);
const maxSeconds = Number(process.env.BENCH_INGEST_SECONDS ?? 20);
const ingestProcesses = Number(process.env.BENCH_INGEST_PROCESSES ?? 2);
const generatorFile = new URL('../lib/load-generator.ts', import.meta.url).pathname;
const serverFile = new URL('../lib/ingest-server.ts', import.meta.url).pathname;

/**
 * Loads the ingest app: in this process by default, or the given ingest server processes (then
 * `log` is only read, for the record count). `appendRate`: the log's own ceiling measured in this
 * run (`appendAlone` on the log underneath), printed with the ratio to it.
 */
async function measure(
  variant: string,
  log: EventStream,
  appendRate: number | undefined,
  servers?: { token: string; ports: number[]; pids: number[] },
): Promise<{ figures: Figure[]; details: unknown }> {
  const token = servers?.token ?? randomBytes(24).toString('base64url');
  const app = servers ? undefined : await createIngestApp({ log, ingestToken: token });
  await app?.listen({ host: '127.0.0.1', port: 0 });
  const ports = servers?.ports ?? [(app!.server.address() as AddressInfo).port];
  try {
    const opts: LoadOptions = {
      urls: ports.map((port) => `http://127.0.0.1:${port}/events`),
      token,
      events,
      batchSize: 1000,
      concurrency,
      maxSeconds,
      warmupRequests: 2 * concurrency,
      tag: `ing${runTag()}`,
      endMs: Date.now(),
    };
    const generator = new Map<number, string>((servers?.pids ?? []).map((pid) => [pid, 'ingest servers']));
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
    const perEvent = before && after ? cpuMicrosPer(before, after, report.acceptedEvents) : {};
    const lat = distribution(report.latenciesMs);
    const rate = (report.acceptedEvents / report.elapsedMs) * 1000;
    // Whole log, warm-up included: a group that never committed counts every record.
    const inLog = await log.lag(`never-${runTag()}`);
    console.error(
      `[ingest] ${variant}: ${report.acceptedEvents} events in ${Math.round(report.elapsedMs)} ms → ${Math.round(rate)} events/s, ` +
        `p50 ${lat.p50.toFixed(1)} ms p99 ${lat.p99.toFixed(1)} ms, CPU % of a core ${JSON.stringify(cpu)}, CPU µs/event ${JSON.stringify(perEvent)}, statuses ${JSON.stringify(report.statuses)}`,
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
        ...(appendRate
          ? [
              fig('log.append alone, 4 in flight', appendRate, 'events/s'),
              // The alternative target: ≥ 80 % of the log's own ceiling in the same run.
              fig('ratio to log.append alone', (rate / appendRate) * 100, '%', {
                target: { op: '>=', value: 80 },
              }),
            ]
          : []),
        ...Object.entries(perEvent)
          .filter(([group]) => group !== 'load generator')
          .map(([group, micros]) => fig(`CPU per event: ${group}`, micros, 'µs')),
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
        appendAloneEventsPerSec: appendRate,
        cpuPercentOfOneCore: cpu,
        cpuMicrosPerEvent: perEvent,
        ...(report.firstError ? { firstError: report.firstError } : {}),
      },
    };
  } finally {
    await app?.close();
  }
}

/** The log's own ceiling: the same kind of batches appended in-process, no HTTP, no validation. */
async function appendAlone(log: EventLog): Promise<number> {
  const traffic = generateTraffic({ events: 50_000, tag: `app${runTag()}`, endMs: Date.now() });
  return fillLog(log, traffic);
}

/** The log's ceiling, printed once per adapter. */
async function ceiling(variant: string, log: EventLog): Promise<number> {
  const rate = await appendAlone(log);
  console.error(`[ingest] ${variant}: log.append alone (no HTTP, 4 in flight): ${rate} events/s`);
  return rate;
}

async function kafka() {
  const topic = `tern-bench.ingest-${runTag()}`;
  const log = createKafkaEventLog({ brokers: env.kafkaBrokers, topic, partitions: 6 });
  // The data keys of the sealed variants (servers mode keeps them in its Postgres database).
  const keys = await openProjectionDatabase(env.databaseUrl);
  try {
    await log.ping(); // creates the topic before the clock starts
    const appendRate = await ceiling('kafka', log);
    const plain = await measure('kafka', createEventStream(log), appendRate);
    const sealed = await measure('kafka, sealed', sealedAsRuntime(log, keys.pool), appendRate);
    const several = ingestProcesses > 1 ? await kafkaProcesses(log, topic, keys.db.url) : undefined;
    return {
      figures: [...plain.figures, ...sealed.figures, ...(several?.figures ?? [])],
      details: { one: plain.details, sealed: sealed.details, several: several?.details },
    };
  } finally {
    await log.close();
    await keys.close();
    await deleteTopic(env.kafkaBrokers, topic);
  }
}

/**
 * Horizontal scale on one machine: `ingestProcesses` ingest processes as servers mode runs them
 * (sealing, keys in `keysUrl`), connections spread over them.
 */
async function kafkaProcesses(log: EventLog, topic: string, keysUrl: string) {
  const token = randomBytes(24).toString('base64url');
  const children = Array.from({ length: ingestProcesses }, () =>
    startTsx(serverFile, [JSON.stringify({ brokers: env.kafkaBrokers, topic, token, keysUrl })], (l) =>
      l.startsWith('{"port"'),
    ),
  );
  try {
    const ports = await Promise.all(
      children.map(async (c) => (JSON.parse(await c.line) as { port: number }).port),
    );
    return await measure(
      `kafka, sealed, ${ingestProcesses} ingest processes`,
      createEventStream(log),
      undefined,
      {
        token,
        ports,
        pids: children.map((c) => c.pid),
      },
    );
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}

async function postgresTable() {
  // Migrated: the embedded deployment keeps the log table and the data keys in one database.
  const store = await openProjectionDatabase(env.databaseUrl);
  try {
    const log = createPostgresEventLog({ pool: store.pool });
    await log.ensureSchema();
    try {
      const appendRate = await ceiling('postgres-table', log);
      const plain = await measure('postgres-table', createEventStream(log), appendRate);
      const sealed = await measure('postgres-table, sealed', sealedAsRuntime(log, store.pool), appendRate);
      return {
        figures: [...plain.figures, ...sealed.figures],
        details: { plain: plain.details, sealed: sealed.details },
      };
    } finally {
      await log.close();
    }
  } finally {
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
const stages = ingestStages(generateTraffic({ events: 50_000, tag: 'stages', endMs: Date.now() }));
console.error(`[ingest] CPU per event of request stages (µs): ${JSON.stringify(stages)}`);
for (const [stage, micros] of Object.entries(stages)) {
  figures.push({ bench: 'ingest', variant: 'CPU per event', metric: stage, value: micros, unit: 'µs' });
}
details.cpuMicrosPerEvent = stages;
emitMeasured('ingest', figures, withPeakRss(details), started);
