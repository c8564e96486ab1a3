/**
 * Projection throughput: a log pre-filled with realistic traffic (several tenants, ≈ 3.9 events
 * per email, events of neighbouring emails interleaved) is folded by the real projector into a
 * fresh Postgres database and embedded chDB; timed from start until every record is handled,
 * then checked against the in-memory fold. Per log adapter and per maxBatchSize, and at the
 * runtime's batch size (10 000) `sealed` as servers mode and `npm start` run it: the log filled
 * through the sealing log, the projector opening email.queued's personal fields (SPEC §14).
 * Target (project issues): ≥ 25 000 events/s.
 *
 * The sliceable rollup (SPEC §26, issue 44): at the runtime's batch size each log is also folded with
 * the dimensions switched off (`analytics_dims_targets` emptied: no dimension rows in the outbox,
 * none inserted into chDB; the fold still computes them, timed apart in the CPU stages), and the
 * ratio of the two rates printed (target: the dimensions cost ≤ 20 %, ratio ≥ 0.8). Then the
 * reprojection (`npm run reproject -- analytics`, `reprojectAnalytics`) of a Postgres-table log of
 * each size of BENCH_REPROJECT_EVENTS (default 100 000 and 400 000 events), once the projector has
 * claimed them: its rate in events/s and how it scales with the log.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { DeliveryEvent } from '@tern/contracts';
import {
  createEventStream,
  createKafkaEventLog,
  createPostgresEventLog,
  type EventStream,
} from '@tern/event-log';
import { type BatchStats, createProjector, reprojectAnalytics } from '@tern/projector';
import { setDimTargets } from '@tern/read-models';
import pg from 'pg';
import { type CpuSnapshot, cpuBetween, cpuMicrosPer, cpuSnapshot } from '../lib/cpu.js';
import { projectionStages } from '../lib/cpu-stages.js';
import { fillLog, fillStream, generateTraffic } from '../lib/events.js';
import {
  actualTotals,
  BENCH_LOG_DAYS,
  expectedTotals,
  openChdb,
  openProjectionDatabase,
} from '../lib/projection-stores.js';
import { emitMeasured, type Figure, withPeakRss } from '../lib/report.js';
import { sealedAsRuntime } from '../lib/sealing.js';
import { benchEnv, deleteTopic, runTag } from '../lib/services.js';
import { Spans, timedClickHouse, timedPgClient } from '../lib/spans.js';
import { distribution, round, rssMiB } from '../lib/stats.js';

const TARGET = { op: '>=', value: 25_000 } as const;
const env = benchEnv(process.env);
const total = Number(process.env.BENCH_PROJECTION_EVENTS ?? 100_000);
const batchSizes = (process.env.BENCH_BATCH_SIZES ?? '1000,5000,10000').split(',').map(Number);
const maxSeconds = Number(process.env.BENCH_PROJECTION_SECONDS ?? 60);
const projectorCount = Number(process.env.BENCH_PROJECTORS ?? 2);
const reprojectSizes = (process.env.BENCH_REPROJECT_EVENTS ?? '100000,400000')
  .split(',')
  .filter(Boolean)
  .map(Number);
/** Empties the rollups between runs (the chDB is shared by every run of the process). */
const truncateRollups = async (ch: ClickHouseClient) => {
  await ch.command({ query: 'TRUNCATE TABLE email_daily_v2' });
  await ch.command({ query: 'TRUNCATE TABLE IF EXISTS email_dims_v1' });
  await ch.command({ query: 'TRUNCATE TABLE IF EXISTS email_dims_v1_tags' });
};
/** The projector's default `maxBatchSize` (services/projector), the size of the sealed runs. */
const RUNTIME_BATCH_SIZE = 10_000;
// Statement and ClickHouse call timings of the projector (a few µs of overhead per call).
const spans = new Spans();
const TimedClient = timedPgClient(spans);

interface RunOutcome {
  figures: Figure[];
  details: Record<string, unknown>;
}

/** Runs the projector over the filled log until it handled `events.length` records (or the deadline). */
async function project(
  variant: string,
  log: EventStream,
  pool: pg.Pool,
  ch: ClickHouseClient,
  maxBatchSize: number,
  events: readonly DeliveryEvent[],
  tenantPrefix: string,
  instances = 1,
  dims = true,
  boundSeconds = maxSeconds,
): Promise<RunOutcome> {
  // Dimensions off: no version of the sliceable rollup named, so none written (writeOutbox).
  if (!dims) await setDimTargets(pool, []);
  const group = `tern-bench.projector-${runTag()}`;
  const batches: BatchStats[] = [];
  let handled = 0;
  let firstBatchAt: { at: number; records: number } | undefined;
  let done: (() => void) | undefined;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  // Several instances in one group split the partitions, as separate projector processes would.
  const projectors = Array.from({ length: instances }, () =>
    createProjector({
      pool,
      ch: timedClickHouse(ch, spans),
      log,
      group,
      maxBatchSize,
      onBatch: (stats) => {
        batches.push(stats);
        firstBatchAt ??= { at: performance.now(), records: stats.records };
        handled += stats.records;
        if (handled >= events.length) done?.();
      },
    }),
  );
  const projector = projectors[0]!;
  spans.reset();
  const before: CpuSnapshot = cpuSnapshot();
  const started = performance.now();
  await Promise.all(projectors.map((p) => p.start()));
  const timedOut = await Promise.race([
    finished.then(() => false),
    new Promise<boolean>((r) => setTimeout(() => r(true), boundSeconds * 1000).unref()),
  ]);
  const elapsedMs = performance.now() - started;
  const after = cpuSnapshot();
  const cpu = cpuBetween(before, after);
  const perEvent = cpuMicrosPer(before, after, Math.max(1, handled));
  const spanReport = spans.report(elapsedMs);
  // The last commit follows onBatch; wait for it so lag() reads 0 as the issue defines "done".
  let lag = await projector.lag();
  for (let i = 0; i < 50 && lag > 0 && !timedOut; i++) {
    await new Promise((r) => setTimeout(r, 100));
    lag = await projector.lag();
  }
  await Promise.all(projectors.map((p) => p.stop()));

  const expected = expectedTotals(events);
  const actual = await actualTotals(pool, ch, tenantPrefix);
  const verified = !timedOut && JSON.stringify(expected) === JSON.stringify(actual);
  const rate = (handled / elapsedMs) * 1000;
  // Once the consumer has joined its group and folded a first batch: the rate a running projector
  // keeps (the start — group join, first fetch, chDB's first insert — is paid once per process).
  const steadyMs = firstBatchAt ? started + elapsedMs - firstBatchAt.at : 0;
  const steadyRate = firstBatchAt && steadyMs > 0 ? ((handled - firstBatchAt.records) / steadyMs) * 1000 : 0;
  const firstBatchMs = firstBatchAt ? firstBatchAt.at - started : Number.NaN;
  const durations = distribution(batches.map((b) => b.durationMs));
  const sizes = distribution(batches.map((b) => b.records));
  const name = `${dims ? '' : 'no dims: '}${variant} batch ${maxBatchSize}${instances > 1 ? ` ×${instances} projectors` : ''}`;
  console.error(
    `[projection] ${name}: ${handled} events in ${Math.round(elapsedMs)} ms → ${Math.round(rate)} events/s; ` +
      `${batches.length} batches (mean ${Math.round(sizes.mean)} records), batch p50 ${durations.p50.toFixed(0)} ms p99 ${durations.p99.toFixed(0)} ms; ` +
      `first batch done ${Math.round(firstBatchMs)} ms after start, then ${Math.round(steadyRate)} events/s; ` +
      `lag ${lag}; verified ${verified}; CPU % of a core ${JSON.stringify(cpu)}; CPU µs/event ${JSON.stringify(perEvent)}`,
  );
  for (const s of spanReport.slice(0, 12)) {
    console.error(
      `[projection]   ${s.span.padEnd(42)} ${String(s.count).padStart(5)} × ${String(s.meanMs).padStart(7)} ms = ${String(s.totalMs).padStart(6)} ms (${s.pctOfWall} % of wall)`,
    );
  }
  if (!verified)
    console.error(`[projection] expected ${JSON.stringify(expected)} got ${JSON.stringify(actual)}`);
  const fig = (metric: string, value: number, unit: string, extra: Partial<Figure> = {}): Figure => ({
    bench: 'projection',
    variant: name,
    metric,
    value,
    unit,
    ...extra,
  });
  return {
    figures: [
      fig('throughput', rate, 'events/s', {
        target: TARGET,
        ...(timedOut
          ? { note: `stopped at the ${boundSeconds} s bound` }
          : verified
            ? {}
            : { note: 'totals differ' }),
      }),
      fig('throughput after the first batch', steadyRate, 'events/s'),
      fig('start to the first batch done', firstBatchMs, 'ms'),
      fig('records per batch (mean)', sizes.mean, 'records'),
      fig('batch p50', durations.p50, 'ms'),
      fig('batch p99', durations.p99, 'ms'),
      ...Object.entries(perEvent).map(([group, micros]) => fig(`CPU per event: ${group}`, micros, 'µs')),
    ],
    details: {
      maxBatchSize,
      projectors: instances,
      dims,
      eventsPerSec: Math.round(rate),
      steadyEventsPerSec: Math.round(steadyRate),
      firstBatchMs: Math.round(firstBatchMs),
      handled,
      elapsedMs: Math.round(elapsedMs),
      batches: batches.length,
      recordsPerBatch: { mean: round(sizes.mean, 0), max: sizes.max },
      batchDurationMs: Object.fromEntries(Object.entries(durations).map(([k, v]) => [k, round(v, 1)])),
      lagAtEnd: lag,
      timedOut,
      verified,
      expected,
      actual,
      cpuPercentOfOneCore: cpu,
      cpuMicrosPerEvent: perEvent,
      spans: spanReport,
      rssMiB: rssMiB(),
    },
  };
}

/** The maxBatchSize of the fastest single-projector run of a log so far. */
function best(prefix: string): unknown {
  return outcomes
    .filter(
      (o) => o.details.projectors === 1 && o.details.dims && String(o.figures[0]?.variant).startsWith(prefix),
    )
    .sort((a, b) => b.figures[0]!.value - a.figures[0]!.value)[0]?.details.maxBatchSize;
}

/** A fresh topic of the run's traffic under `tag`, as the runtime reads it (services/tern/src/runtime.ts). */
function kafkaRun(tag: string) {
  const events = generateTraffic({ events: total, tag, endMs: Date.now() });
  const topic = `tern-bench.projection-${tag}`;
  // Six partitions, two folded side by side, as the runtime does.
  const log = createKafkaEventLog({
    brokers: env.kafkaBrokers,
    topic,
    partitions: 6,
    partitionConcurrency: 2,
  });
  return { events, topic, log };
}

async function kafka(ch: ClickHouseClient, outcomes: RunOutcome[]): Promise<void> {
  const tag = `pk${runTag()}`;
  const { events, topic, log } = kafkaRun(tag);
  try {
    const fillRate = await fillLog(log, events);
    console.error(`[projection] kafka: filled ${events.length} events at ${fillRate} events/s`);
    // The runtime's size again with the dimensions off (issue 44: what the new columns cost).
    const runs = [
      ...batchSizes.map((size) => ({ size, dims: true })),
      { size: RUNTIME_BATCH_SIZE, dims: false },
    ];
    for (const { size, dims } of runs) {
      await truncateRollups(ch);
      const store = await openProjectionDatabase(env.databaseUrl, {
        Client: TimedClient,
        logDays: BENCH_LOG_DAYS,
      });
      try {
        const outcome = await project(
          'kafka',
          createEventStream(log),
          store.pool,
          ch,
          size,
          events,
          tag,
          1,
          dims,
        );
        outcome.details.fillEventsPerSec = fillRate;
        outcomes.push(outcome);
      } finally {
        await store.close();
      }
    }
    if (projectorCount > 1) {
      // Scale-out: the best batch size so far, with several consumers splitting the 6 partitions.
      const size = Number(best('kafka') ?? batchSizes.at(-1));
      await truncateRollups(ch);
      const store = await openProjectionDatabase(env.databaseUrl, {
        Client: TimedClient,
        logDays: BENCH_LOG_DAYS,
      });
      try {
        outcomes.push(
          await project('kafka', createEventStream(log), store.pool, ch, size, events, tag, projectorCount),
        );
      } finally {
        await store.close();
      }
    }
  } finally {
    await log.close();
    await deleteTopic(env.kafkaBrokers, topic);
  }
  await kafkaSealed(ch, outcomes);
}

/** As servers mode runs it: a topic filled through the sealing log, the projector opening it. */
async function kafkaSealed(ch: ClickHouseClient, outcomes: RunOutcome[]): Promise<void> {
  const tag = `pks${runTag()}`;
  const { events, topic, log } = kafkaRun(tag);
  await truncateRollups(ch);
  const store = await openProjectionDatabase(env.databaseUrl, {
    Client: TimedClient,
    logDays: BENCH_LOG_DAYS,
  });
  try {
    // The ingest side's keyring creates the keys; the projector's own (cold) one reads them.
    const fillRate = await fillStream(sealedAsRuntime(log, store.pool), events);
    console.error(`[projection] kafka sealed: filled ${events.length} events at ${fillRate} events/s`);
    const opened = sealedAsRuntime(log, store.pool);
    const outcome = await project('kafka sealed', opened, store.pool, ch, RUNTIME_BATCH_SIZE, events, tag);
    outcome.details.fillEventsPerSec = fillRate;
    outcomes.push(outcome);
  } finally {
    await store.close();
    await log.close();
    await deleteTopic(env.kafkaBrokers, topic);
  }
}

async function postgresTable(ch: ClickHouseClient, outcomes: RunOutcome[]): Promise<void> {
  const tag = `pp${runTag()}`;
  const events = generateTraffic({ events: total, tag, endMs: Date.now() });
  const runs = [
    ...batchSizes.map((size) => ({ size, sealed: false, dims: true })),
    { size: RUNTIME_BATCH_SIZE, sealed: false, dims: false },
    { size: RUNTIME_BATCH_SIZE, sealed: true, dims: true },
  ];
  for (const { size, sealed, dims } of runs) {
    await truncateRollups(ch);
    // The log table lives in the projection's own database, as in the all-in-one deployment.
    const store = await openProjectionDatabase(env.databaseUrl, {
      Client: TimedClient,
      logDays: BENCH_LOG_DAYS,
    });
    const logPool = new pg.Pool({ connectionString: store.db.url, max: 4 });
    logPool.on('error', () => {});
    const log = createPostgresEventLog({ pool: logPool });
    const variant = sealed ? 'postgres-table sealed' : 'postgres-table';
    try {
      // Sealed: the keys in the same database, as the embedded deployment keeps them.
      const fillRate = sealed
        ? await fillStream(sealedAsRuntime(log, store.pool), events)
        : await fillLog(log, events);
      console.error(`[projection] ${variant}: filled ${events.length} events at ${fillRate} events/s`);
      const consumed = sealed ? sealedAsRuntime(log, store.pool) : createEventStream(log);
      const outcome = await project(variant, consumed, store.pool, ch, size, events, tag, 1, dims);
      outcome.details.fillEventsPerSec = fillRate;
      outcomes.push(outcome);
    } finally {
      await log.close();
      await logPool.end().catch(() => {});
      await store.close();
    }
  }
}

/** Dimensions on over off, per log, at the runtime's batch size (both unsealed, same process). */
function dimsCost(): Figure[] {
  const rateOf = (prefix: string, dims: boolean) =>
    outcomes.find(
      (o) =>
        o.details.dims === dims &&
        o.details.maxBatchSize === RUNTIME_BATCH_SIZE &&
        o.details.projectors === 1 &&
        String(o.figures[0]?.variant) === `${dims ? '' : 'no dims: '}${prefix} batch ${RUNTIME_BATCH_SIZE}`,
    )?.figures[0]?.value;
  const out: Figure[] = [];
  for (const prefix of ['kafka', 'postgres-table']) {
    const on = rateOf(prefix, true);
    const off = rateOf(prefix, false);
    if (on === undefined || off === undefined) continue;
    console.error(
      `[projection] ${prefix}: dimensions on ${Math.round(on)} events/s, off ${Math.round(off)}: ×${(on / off).toFixed(2)}`,
    );
    out.push({
      bench: 'projection',
      variant: `${prefix} batch ${RUNTIME_BATCH_SIZE}`,
      metric: 'throughput with dimensions / without',
      value: on / off,
      unit: '×',
      target: { op: '>=', value: 0.8 },
    });
  }
  return out;
}

/**
 * `reprojectAnalytics` over a Postgres-table log of `size` events the projector has folded (the
 * replay folds only what the timeline claimed): no live ingest, batches of 5000, hand-over and
 * write-back included (every email state is rewritten: the bench's projector had no mailbox
 * resolver, the replay classifies by domain).
 */
async function reprojection(ch: ClickHouseClient, size: number): Promise<RunOutcome> {
  const tag = `pr${runTag()}`;
  const events = generateTraffic({ events: size, tag, endMs: Date.now() });
  await truncateRollups(ch);
  const store = await openProjectionDatabase(env.databaseUrl);
  const logPool = new pg.Pool({ connectionString: store.db.url, max: 4 });
  logPool.on('error', () => {});
  const log = createPostgresEventLog({ pool: logPool });
  try {
    await fillLog(log, events);
    const projected = await project(
      'reprojection fill',
      createEventStream(log),
      store.pool,
      ch,
      RUNTIME_BATCH_SIZE,
      events,
      tag,
      1,
      true,
      // Not a measurement, a set-up: the whole log must be folded (400 000 events at ≈ 5 000/s took
      // longer than the runs' 60 s bound, and the bench stopped here).
      Math.max(maxSeconds, size / 1000),
    );
    if (!projected.details.verified) throw new Error('the projector did not fold the reprojection log');
    const before = cpuSnapshot();
    const result = await reprojectAnalytics({
      pool: store.pool,
      ch,
      log: createEventStream(log),
      group: `tern-bench.reproject-${runTag()}`,
      maxBatchSize: 5000,
      mailboxes: { size: 0, prepare: async () => (to) => (to?.endsWith('@gmail.com') ? 'gmail' : 'other') },
    });
    const cpu = cpuBetween(before, cpuSnapshot());
    const rate = (result.events / result.durationMs) * 1000;
    console.error(
      `[projection] reprojection of ${result.events} events (${result.counted} counted, ${result.rewritten} states rewritten): ` +
        `${Math.round(result.durationMs)} ms → ${Math.round(rate)} events/s; RSS ${rssMiB()} MiB; CPU % of a core ${JSON.stringify(cpu)}`,
    );
    const variant = `reprojection, Postgres-table log of ${size.toLocaleString('en-US')} events`;
    return {
      figures: [
        { bench: 'projection', variant, metric: 'replay rate', value: rate, unit: 'events/s' },
        { bench: 'projection', variant, metric: 'duration', value: result.durationMs, unit: 'ms' },
      ],
      details: {
        size,
        ...result,
        eventsPerSec: Math.round(rate),
        cpuPercentOfOneCore: cpu,
        rssMiB: rssMiB(),
      },
    };
  } finally {
    await log.close();
    await logPool.end().catch(() => {});
    await store.close();
  }
}

/** How the replay rate scales: the largest log's rate over the smallest's. */
function scaling(): Figure[] {
  if (reprojections.length < 2) return [];
  const rate = (o: RunOutcome) => Number(o.details.eventsPerSec);
  const first = reprojections[0]!;
  const last = reprojections.at(-1)!;
  return [
    {
      bench: 'projection',
      variant: `reprojection, ${Number(last.details.size).toLocaleString('en-US')} over ${Number(first.details.size).toLocaleString('en-US')} events`,
      metric: 'replay rate ratio',
      value: rate(last) / rate(first),
      unit: '×',
    },
  ];
}

const started = performance.now();
const which = (process.env.BENCH_LOGS ?? 'kafka,postgres').split(',');
console.error(
  `[projection] email_logs with ${BENCH_LOG_DAYS} day partitions (BENCH_LOG_DAYS; 0: every row in the DEFAULT)`,
);
const chdb = await openChdb();
// chDB runs in this process: its engine alone accounts for much of the RSS printed at the end.
const rssAfterChdbOpenMiB = rssMiB();
const outcomes: RunOutcome[] = [];
const reprojections: RunOutcome[] = [];
try {
  if (which.includes('kafka')) await kafka(chdb.ch, outcomes);
  if (which.includes('postgres')) await postgresTable(chdb.ch, outcomes);
  for (const size of reprojectSizes) reprojections.push(await reprojection(chdb.ch, size));
} finally {
  await chdb.close();
}
const stages = projectionStages(generateTraffic({ events: 50_000, tag: 'stages', endMs: Date.now() }), 5000);
console.error(`[projection] CPU per event of in-memory stages (µs): ${JSON.stringify(stages)}`);
const stageFigures: Figure[] = Object.entries(stages).map(([stage, micros]) => ({
  bench: 'projection',
  variant: 'CPU per event',
  metric: stage,
  value: micros,
  unit: 'µs',
}));

const figures = [
  ...outcomes.flatMap((o) => o.figures),
  ...dimsCost(),
  ...reprojections.flatMap((o) => o.figures),
  ...scaling(),
  ...stageFigures,
];
const details = withPeakRss({
  events: total,
  cpuMicrosPerEvent: stages,
  runs: outcomes.map((o) => ({ variant: o.figures[0]?.variant, ...o.details })),
  reprojections: reprojections.map((o) => o.details),
  bestBatchSize: { kafka: best('kafka'), postgresTable: best('postgres-table') },
  logDays: BENCH_LOG_DAYS,
});
emitMeasured('projection', figures, { ...details, rssAfterChdbOpenMiB }, started);
