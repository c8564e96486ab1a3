import { ConfigError, loadConfig } from '@tern/config';
import { createKafkaEventLog, createPostgresEventLog, type EventLog } from '@tern/event-log';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import { rebuildProjections } from '@tern/projector';
import { createClickHouse, createPostgres, migrateClickHouse, migratePostgres } from '@tern/stores';
import { pino } from 'pino';
import { MIGRATIONS, PROJECTOR_GROUP } from './runtime.js';
import { loadOrCreateDevSecrets } from './secrets.js';

/**
 * `npm run rebuild`: replays the whole event log into fresh projections. Stop the projectors
 * (or `npm start`) first; start them again afterwards.
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env, { requireSecrets: false });
  const logger = pino({ level: config.logLevel });
  const pg = await createPostgres({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
  const ch = createClickHouse({ clickhouseUrl: config.clickhouseUrl, dataDir: config.dataDir });
  let log: EventLog | undefined;
  try {
    await migratePostgres(pg.pool, MIGRATIONS.postgres);
    await migrateClickHouse(ch.client, MIGRATIONS.clickhouse);
    if (config.kafkaBrokers) {
      log = createKafkaEventLog({ brokers: config.kafkaBrokers, topic: config.kafkaTopic, logger });
    } else {
      const pgLog = createPostgresEventLog({ pool: pg.pool, pollIntervalMs: 50 });
      await pgLog.ensureSchema();
      log = pgLog;
    }
    // Sealed fields are opened with the keys still there: an erased recipient's (or a month past
    // retention) stay null, so the rebuilt read models are as scrubbed as before (SPEC §14).
    const encryptionKey =
      config.encryptionKey ??
      (config.nodeEnv === 'production' ? undefined : loadOrCreateDevSecrets(config.dataDir).encryptionKey);
    if (!encryptionKey)
      throw new ConfigError('Invalid configuration: ENCRYPTION_KEY must be set', ['ENCRYPTION_KEY']);
    const stream = sealedEventStream(log, createKeyring({ pool: pg.pool, encryptionKey }));
    const group = `${PROJECTOR_GROUP}.rebuild.${Date.now()}`;
    logger.info({ group }, 'rebuilding projections from the beginning of the log');
    const { events, durationMs } = await rebuildProjections({
      pool: pg.pool,
      ch: ch.client,
      log: stream,
      group,
      logger,
    });
    const perSecond = Math.round(events / (durationMs / 1000));
    process.stdout.write(
      `rebuilt from ${events} records in ${Math.round(durationMs)} ms (${perSecond} records/s)\n`,
    );
  } finally {
    await log?.close();
    await ch.close();
    await pg.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    error instanceof ConfigError
      ? `${error.message}\n`
      : `rebuild failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
