import type { ClickHouseClient } from '@clickhouse/client';
import { createKafkaEventLog, createPostgresEventLog, type EventLog } from '@tern/event-log';
import pg from 'pg';
import { openChdb, openProjectionDatabase } from './projection-stores.js';
import { emitMeasured, type Figure, withPeakRss } from './report.js';
import { type BenchEnv, deleteTopic, runTag } from './services.js';
import { rssMiB } from './stats.js';

/** What a bench measures on one event-log adapter. */
export interface VariantResult {
  figures: Figure[];
  details: unknown;
}

/** Measures on an open log, with the projection's fresh database pool and the process's chDB. */
export type MeasureOnLog = (
  variant: 'postgres-table' | 'kafka',
  log: EventLog,
  pool: pg.Pool,
  ch: ClickHouseClient,
) => Promise<VariantResult>;

/**
 * `measure` on the Postgres-table log in a fresh projection database. `logPoolMax`: the log gets
 * a pool of its own of that size (otherwise it shares the projection's).
 */
export async function onPostgresTableLog(
  env: BenchEnv,
  ch: ClickHouseClient,
  measure: MeasureOnLog,
  opts: { logPoolMax?: number; pollIntervalMs?: number } = {},
): Promise<VariantResult> {
  const store = await openProjectionDatabase(env.databaseUrl);
  const logPool =
    opts.logPoolMax === undefined
      ? null
      : new pg.Pool({ connectionString: store.db.url, max: opts.logPoolMax });
  logPool?.on('error', () => {});
  const log = createPostgresEventLog({
    pool: logPool ?? store.pool,
    ...(opts.pollIntervalMs === undefined ? {} : { pollIntervalMs: opts.pollIntervalMs }),
  });
  try {
    await log.ensureSchema();
    return await measure('postgres-table', log, store.pool, ch);
  } finally {
    await log.close();
    await logPool?.end().catch(() => {});
    await store.close();
  }
}

/** `measure` on a fresh Kafka topic of 6 partitions (deleted after), with a fresh projection database. */
export async function onKafkaLog(
  env: BenchEnv,
  ch: ClickHouseClient,
  measure: MeasureOnLog,
  opts: {
    topicPrefix: string;
    partitionConcurrency?: number;
    fetchMaxBytesPerPartition?: number;
    fetchMaxBytes?: number;
  },
): Promise<VariantResult> {
  const { topicPrefix, ...rest } = opts;
  const topic = `${topicPrefix}-${runTag()}`;
  const given = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  const log = createKafkaEventLog({ brokers: env.kafkaBrokers, topic, partitions: 6, ...given });
  const store = await openProjectionDatabase(env.databaseUrl);
  try {
    await log.ping();
    return await measure('kafka', log, store.pool, ch);
  } finally {
    await log.close();
    await store.close();
    await deleteTopic(env.kafkaBrokers, topic);
  }
}

/**
 * The main of a bench measured per log adapter: one chDB for the process, the adapters named by
 * `BENCH_LOGS` (default `defaultLogs`, whose order is kept), their figures and details in one result.
 * `details` adds fields (it sees the RSS right after chDB opened: its engine is much of the RSS).
 */
export async function runOnLogs(opts: {
  bench: string;
  defaultLogs: string;
  postgres: (ch: ClickHouseClient) => Promise<VariantResult>;
  kafka: (ch: ClickHouseClient) => Promise<VariantResult>;
  details?: (ctx: { rssAfterChdbOpenMiB: number }) => Record<string, unknown>;
}): Promise<void> {
  const started = performance.now();
  const which = (process.env.BENCH_LOGS ?? opts.defaultLogs).split(',');
  const chdb = await openChdb();
  const rssAfterChdbOpenMiB = rssMiB();
  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  try {
    for (const name of opts.defaultLogs.split(',').filter((n) => which.includes(n))) {
      if (name === 'kafka') {
        const r = await opts.kafka(chdb.ch);
        figures.push(...r.figures);
        details.kafka = r.details;
      } else if (name === 'postgres') {
        const r = await opts.postgres(chdb.ch);
        figures.push(...r.figures);
        details.postgresTable = r.details;
      }
    }
  } finally {
    await chdb.close();
  }
  const extra = opts.details?.({ rssAfterChdbOpenMiB }) ?? {};
  emitMeasured(opts.bench, figures, { ...withPeakRss(details), ...extra }, started);
}

/**
 * `runOnLogs` the way the send-path benches run it: the Postgres-table log polled every 100 ms,
 * then a fresh `tern-bench.<bench>` Kafka topic (`kafka`: its consumer's options), `defaultLogs`
 * by default both.
 */
export function runOnTableAndKafka(
  bench: string,
  env: BenchEnv,
  measure: MeasureOnLog,
  kafka: { partitionConcurrency?: number } = {},
  defaultLogs = 'postgres,kafka',
): Promise<void> {
  return runOnLogs({
    bench,
    defaultLogs,
    postgres: (ch) => onPostgresTableLog(env, ch, measure, { pollIntervalMs: 100 }),
    kafka: (ch) => onKafkaLog(env, ch, measure, { topicPrefix: `tern-bench.${bench}`, ...kafka }),
  });
}
