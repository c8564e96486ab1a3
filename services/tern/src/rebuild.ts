import { rebuildProjections } from '@tern/projector';
import { runReplayCommand } from './replay-command.js';
import { PROJECTOR_GROUP } from './roles/projector.js';

/**
 * `npm run rebuild`: replays the whole event log into fresh projections. Stop the projectors
 * (or `npm start`) first; start them again afterwards. Stores and log open as the runtime opens
 * them (services/tern/src/stores.ts): the same Kafka partitions and consumer concurrency.
 */
runReplayCommand('rebuild', async ({ logger, pool, ch, stream, mailboxes }) => {
  const group = `${PROJECTOR_GROUP}.rebuild.${Date.now()}`;
  logger.info({ group }, 'rebuilding projections from the beginning of the log');
  const { events, durationMs } = await rebuildProjections({
    pool,
    ch,
    log: stream,
    group,
    logger,
    mailboxes,
  });
  const perSecond = Math.round(events / (durationMs / 1000));
  process.stdout.write(
    `rebuilt from ${events} records in ${Math.round(durationMs)} ms (${perSecond} records/s)\n`,
  );
});
