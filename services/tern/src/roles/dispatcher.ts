import { createDispatcher, DISPATCHER_GROUP } from '@tern/dispatcher';
import { capability, type RuntimeContext, streamOf } from '../context.js';

/** The dispatcher role: webhook deliveries of the log's events (SPEC §17). */
export async function startDispatcher(ctx: RuntimeContext): Promise<void> {
  const { config, metrics } = ctx;
  const dispatcher = createDispatcher({
    pool: ctx.pool,
    log: streamOf(ctx),
    group: DISPATCHER_GROUP,
    secretBox: capability(ctx, 'secretBox'),
    allowPrivate: config.webhookAllowPrivate,
    // Delivery records (request bodies hold personal data) live as long as the delivery log.
    recordRetentionMs: config.retentionDays * 86_400_000,
    logger: ctx.logger,
    onAttempt(attempt) {
      metrics.webhookAttempts.inc({ outcome: attempt.outcome });
      metrics.webhookAttemptDuration.observe(attempt.result.durationMs);
    },
  });
  await dispatcher.start();
  ctx.running.dispatcher = dispatcher;
  ctx.onClose('dispatcher', () => dispatcher.stop());
}
