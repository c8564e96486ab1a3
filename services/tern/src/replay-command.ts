import { type Config, ConfigError, loadConfig } from '@tern/config';
import type { EventStream } from '@tern/event-log';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import { createMailboxResolver } from '@tern/projector';
import { type Logger, pino } from 'pino';
import { loadOrCreateDevSecrets } from './secrets.js';
import { type Closer, closeInOrder } from './shutdown.js';
import { type OpenedStores, openEventLog, openStores } from './stores.js';

/** What a command replaying the whole log into read models works with. */
export interface ReplayContext {
  config: Config;
  logger: Logger;
  pool: OpenedStores['pg']['pool'];
  ch: NonNullable<OpenedStores['ch']>['client'];
  /** The log from its start, sealed fields opened with the keys still there. */
  stream: EventStream;
  mailboxes: ReturnType<typeof createMailboxResolver>;
}

/**
 * The frame of `npm run rebuild` and `npm run reproject`: stores and log opened as the runtime
 * opens them (services/tern/src/stores.ts: the same Kafka partitions and consumer concurrency),
 * sealed fields opened with the keys still there — an erased recipient's (or a month past
 * retention) stay null, so what is replayed is as scrubbed as before (SPEC §14) — then `run`,
 * everything closed after it; a failure is printed (`<name> failed: …`) and exits 1.
 */
export function runReplayCommand(name: string, run: (ctx: ReplayContext) => Promise<void>): void {
  const main = async () => {
    const config = loadConfig(process.env, { requireSecrets: false });
    const logger = pino({ level: config.logLevel });
    const closers: Closer[] = [];
    const onClose = (what: string, close: () => Promise<unknown>) =>
      void closers.unshift({ name: what, close });
    try {
      const { pg, ch } = await openStores(config, logger, { clickhouse: true }, onClose);
      const log = await openEventLog(config, pg, logger, { pollIntervalMs: 50 });
      onClose('event-log', () => log.close());
      const encryptionKey =
        config.encryptionKey ??
        (config.nodeEnv === 'production' ? undefined : loadOrCreateDevSecrets(config.dataDir).encryptionKey);
      if (!encryptionKey)
        throw new ConfigError('Invalid configuration: ENCRYPTION_KEY must be set', ['ENCRYPTION_KEY']);
      const stream = sealedEventStream(log, createKeyring({ pool: pg.pool, encryptionKey }));
      await run({
        config,
        logger,
        pool: pg.pool,
        ch: ch!.client,
        stream,
        mailboxes: createMailboxResolver({ servers: config.dnsServers }),
      });
    } finally {
      await closeInOrder(closers.splice(0));
    }
  };
  main().catch((error: unknown) => {
    process.stderr.write(
      error instanceof ConfigError
        ? `${error.message}\n`
        : `${name} failed: ${error instanceof Error ? error.stack : String(error)}\n`,
    );
    process.exit(1);
  });
}
