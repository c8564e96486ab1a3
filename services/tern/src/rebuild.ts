import { ConfigError, loadConfig } from '@tern/config';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import { createMailboxResolver, rebuildProjections } from '@tern/projector';
import { pino } from 'pino';
import { PROJECTOR_GROUP } from './roles/projector.js';
import { loadOrCreateDevSecrets } from './secrets.js';
import { type Closer, closeInOrder } from './shutdown.js';
import { openEventLog, openStores } from './stores.js';

/**
 * `npm run rebuild`: replays the whole event log into fresh projections. Stop the projectors
 * (or `npm start`) first; start them again afterwards. Stores and log open as the runtime opens
 * them (services/tern/src/stores.ts): the same Kafka partitions and consumer concurrency.
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env, { requireSecrets: false });
  const logger = pino({ level: config.logLevel });
  const closers: Closer[] = [];
  const onClose = (name: string, close: () => Promise<unknown>) => void closers.unshift({ name, close });
  try {
    const { pg, ch } = await openStores(config, logger, { clickhouse: true }, onClose);
    const log = await openEventLog(config, pg, logger, { pollIntervalMs: 50 });
    onClose('event-log', () => log.close());
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
      ch: ch!.client,
      log: stream,
      group,
      logger,
      mailboxes: createMailboxResolver({ servers: config.dnsServers }),
    });
    const perSecond = Math.round(events / (durationMs / 1000));
    process.stdout.write(
      `rebuilt from ${events} records in ${Math.round(durationMs)} ms (${perSecond} records/s)\n`,
    );
  } finally {
    await closeInOrder(closers.splice(0));
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
