import type { Config } from '@tern/config';
import { createKafkaEventLog, createPostgresEventLog, type EventLog } from '@tern/event-log';
import {
  type ClickHouseStore,
  createClickHouse,
  createPostgres,
  migrateClickHouse,
  migratePostgres,
  type PostgresStore,
} from '@tern/stores';
import type { Logger } from 'pino';
import { MIGRATIONS } from './paths.js';

/** The stores of a process: Postgres always, ClickHouse when one of its roles reads or writes it. */
export interface OpenedStores {
  pg: PostgresStore;
  ch?: ClickHouseStore | undefined;
}

/**
 * Opens and migrates the stores the one way `npm start`, every `--services=` role and
 * `npm run rebuild` share (Postgres server or PGlite, ClickHouse server or chDB), side by side.
 * `onOpen` hears each store as soon as it is open, so a failure later (a migration) still closes it.
 */
export async function openStores(
  config: Config,
  logger: Logger,
  opts: { clickhouse: boolean },
  onOpen: (name: 'postgres' | 'clickhouse', close: () => Promise<void>) => void,
): Promise<OpenedStores> {
  // Both stores side by side (issue 45, item 6): PGlite's and chDB's starts and migration checks
  // overlap instead of adding up. A failure of either still closes both (`onOpen` heard them).
  const postgres = (async () => {
    const pg = await createPostgres({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
    onOpen('postgres', () => pg.close());
    await migratePostgres(pg.pool, MIGRATIONS.postgres);
    return pg;
  })();
  const clickhouse = opts.clickhouse
    ? (async () => {
        const ch = createClickHouse({ clickhouseUrl: config.clickhouseUrl, dataDir: config.dataDir });
        onOpen('clickhouse', () => ch.close());
        await migrateClickHouse(ch.client, MIGRATIONS.clickhouse);
        return ch;
      })()
    : Promise.resolve(undefined);
  // Both settle before a failure is thrown, so no store opens after its closer was called.
  const [pg, ch] = await Promise.allSettled([postgres, clickhouse]);
  if (pg.status === 'rejected') throw pg.reason;
  if (ch.status === 'rejected') throw ch.reason;
  return ch.value === undefined ? { pg: pg.value } : { pg: pg.value, ch: ch.value };
}

export interface OpenEventLogOptions {
  /**
   * How often a consumer of the Postgres-table log looks for new records; default 1 s on PGlite
   * (every append is this process's own and wakes its consumers at once), 100 ms on a server.
   */
  pollIntervalMs?: number;
}

/**
 * The event log of `config`: Kafka with KAFKA_BROKERS (the topic's partitions as configured, two of
 * them folded side by side), else the Postgres table (its schema ensured).
 */
export async function openEventLog(
  config: Config,
  pg: PostgresStore,
  logger: Logger,
  opts: OpenEventLogOptions = {},
): Promise<EventLog> {
  if (config.kafkaBrokers) {
    return createKafkaEventLog({
      brokers: config.kafkaBrokers,
      topic: config.kafkaTopic,
      partitions: config.kafkaPartitions,
      sessionTimeoutMs: config.kafkaSessionTimeoutMs,
      // Two handler calls side by side, each with the partitions a fetch brought: the projector
      // alternates between its own CPU and Postgres, so one call at a time leaves both half idle
      // (bench/README.md).
      partitionConcurrency: 2,
      logger,
    });
  }
  // Embedded, every append is this process's own and wakes its consumers at once: an idle
  // consumer need not look more than once a second (issue 10: an idle `npm start`).
  const pgLog =
    pg.kind === 'pglite'
      ? createPostgresEventLog({
          pool: pg.pool,
          pollIntervalMs: opts.pollIntervalMs ?? 1_000,
          singleWriter: true,
        })
      : createPostgresEventLog({ pool: pg.pool, pollIntervalMs: opts.pollIntervalMs ?? 100 });
  await pgLog.ensureSchema();
  return pgLog;
}
