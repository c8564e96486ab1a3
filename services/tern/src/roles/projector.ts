import { EVENT_LOG_TABLE } from '@tern/event-log';
import { NotReadyError } from '@tern/http';
import { createMailboxResolver, createProjector, createPruneJob } from '@tern/projector';
import { capability, type RuntimeContext, streamOf } from '../context.js';

/** The projector's consumer group; every projector instance joins it. */
export const PROJECTOR_GROUP = 'tern-projector';

/**
 * The projector's largest batch when the api answers reads in the same process (issue 49, item
 * 3: `start:projector-api` catching up 76 800 events answered reads at p99 13 s). A batch's
 * decoding, fold and row building run on the event loop between their awaits; 1 000 events keep
 * each such stretch short, and the reads are served between batches. A projector alone folds
 * 10 000 at a time (its default).
 */
export const SHARED_PROCESS_BATCH = 1_000;

/** The projector role: the read models folded from the log, and the pruning of what they no longer need. */
export function startProjector(ctx: RuntimeContext): void {
  const { config, logger, metrics, pool } = ctx;
  const projector = createProjector({
    pool,
    ch: capability(ctx, 'ch'),
    log: streamOf(ctx),
    group: PROJECTOR_GROUP,
    ...(ctx.services.has('api') ? { maxBatchSize: SHARED_PROCESS_BATCH } : {}),
    logger,
    mailboxes: createMailboxResolver({ servers: config.dnsServers }),
    stallAfterMs: config.projectorStallSeconds * 1000,
    onBatch(stats) {
      ctx.activity();
      metrics.batchDuration.observe(stats.durationMs);
      metrics.eventsProjected.inc({ outcome: 'applied' }, stats.applied);
      metrics.eventsProjected.inc({ outcome: 'duplicate' }, stats.duplicates);
      metrics.eventsProjected.inc({ outcome: 'dead_letter' }, stats.deadLettered);
    },
  });
  ctx.running.projector = projector;
  // The projector joins its consumer group in the background (issue 32, item 2): after a
  // kill -9 the group waits out the dead member's session (up to sessionTimeout, 30 s), and the
  // api must not wait with it. Reads answer from the last committed projection meanwhile
  // (X-Tern-As-Of says how old), and /ready says the projection is catching up.
  const startedAt = performance.now();
  let joined = false;
  const starting = projector.start().then(
    () => {
      joined = true;
      logger.info(
        { joinMs: Math.round(performance.now() - startedAt) },
        'projector joined its consumer group',
      );
    },
    (error: unknown) => {
      logger.error({ err: error }, 'projector failed to start');
      throw error;
    },
  );
  ctx.background.push(starting);
  ctx.onClose('projector', async () => {
    await starting.catch(() => undefined);
    await projector.stop();
  });
  // processed_events and the Postgres-table log are pruned past the dedup window (issue 9, item 7).
  const prune = createPruneJob({
    pool,
    group: PROJECTOR_GROUP,
    dedupWindowMs: config.dedupWindowDays * 24 * 3600 * 1000,
    eventLogTable: config.kafkaBrokers ? undefined : EVENT_LOG_TABLE,
    logger,
  });
  prune.start();
  ctx.onClose('prune-job', () => prune.stop());
  // No progress while the log has a lag: /ready says so (issue 9, item 1).
  ctx.readiness.push({
    name: 'projector',
    check: async () => {
      if (!joined)
        return 'catching up: joining the consumer group; reads answer the last committed projection (X-Tern-As-Of)';
      const reason = await projector.stalled();
      if (reason) throw new NotReadyError(reason);
    },
  });
}
