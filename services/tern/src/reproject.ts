import { ConfigError, loadConfig } from '@tern/config';
import { createKeyring, sealedEventStream } from '@tern/privacy';
import { createMailboxResolver, reprojectAnalytics } from '@tern/projector';
import { pino } from 'pino';
import { PROJECTOR_GROUP } from './roles/projector.js';
import { loadOrCreateDevSecrets } from './secrets.js';
import { type Closer, closeInOrder } from './shutdown.js';
import { openEventLog, openStores } from './stores.js';

const USAGE = 'usage: npm run reproject -- analytics\n';

/**
 * `npm run reproject -- analytics` (SPEC §26, docs/analytics.md "Reprojection"): fills the next
 * version of the sliceable rollup from the whole log while the serving one keeps serving and the
 * projectors keep running, then swaps. Progress on stderr; the result on stdout.
 */
async function main(): Promise<void> {
  const what = process.argv[2];
  if (what !== 'analytics') {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  const config = loadConfig(process.env, { requireSecrets: false });
  const logger = pino({ level: config.logLevel });
  const closers: Closer[] = [];
  const onClose = (name: string, close: () => Promise<unknown>) => void closers.unshift({ name, close });
  try {
    const { pg, ch } = await openStores(config, logger, { clickhouse: true }, onClose);
    const log = await openEventLog(config, pg, logger, { pollIntervalMs: 50 });
    onClose('event-log', () => log.close());
    // As `npm run rebuild`: sealed fields opened with the keys still there (SPEC §14).
    const encryptionKey =
      config.encryptionKey ??
      (config.nodeEnv === 'production' ? undefined : loadOrCreateDevSecrets(config.dataDir).encryptionKey);
    if (!encryptionKey)
      throw new ConfigError('Invalid configuration: ENCRYPTION_KEY must be set', ['ENCRYPTION_KEY']);
    const stream = sealedEventStream(log, createKeyring({ pool: pg.pool, encryptionKey }));
    const tty = process.stderr.isTTY;
    let lastLine = 0;
    const result = await reprojectAnalytics({
      pool: pg.pool,
      ch: ch!.client,
      log: stream,
      group: `${PROJECTOR_GROUP}.reproject.${Date.now()}`,
      mailboxes: createMailboxResolver({ servers: config.dnsServers }),
      onProgress({ done, total, perSecond, etaMs }) {
        if (Date.now() - lastLine < 500 && done < total) return;
        lastLine = Date.now();
        const pct = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100;
        const bar = '#'.repeat(Math.floor(pct / 5)).padEnd(20, '.');
        const eta = etaMs === null ? '?' : `${Math.ceil(etaMs / 1000)} s`;
        const line = `[${bar}] ${pct}% ${done}/${total} events, ${Math.round(perSecond)}/s, ETA ${eta}`;
        process.stderr.write(tty ? `\r${line}` : `${line}\n`);
      },
    });
    if (tty) process.stderr.write('\n');
    const perSecond = Math.round(result.events / (result.durationMs / 1000));
    process.stdout.write(
      `reprojected ${result.from} → ${result.to}: ${result.events} records (${result.counted} counted up to claim ${result.cut}, ${result.rewritten} email states reclassified) in ${Math.round(result.durationMs)} ms (${perSecond} records/s); email_dims now reads ${result.to}\n`,
    );
  } finally {
    await closeInOrder(closers.splice(0));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    error instanceof ConfigError
      ? `${error.message}\n`
      : `reproject failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
