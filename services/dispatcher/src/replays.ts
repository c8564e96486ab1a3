import { createPoller, type Poller } from '@tern/jobs';
import {
  type ClaimedReplay,
  claimReplay,
  finishReplay,
  insertDeliveries,
  noteReplayProgress,
} from '@tern/webhooks';
import { type DispatcherContext, errorText } from './context.js';
import { deliveriesFor, type ReplayScope } from './deliveries.js';

/**
 * Webhook replays (SPEC §17): each pending replay is claimed with a lease, reads the whole log in
 * a consumer group of its own and enqueues the deliveries of its endpoint and window.
 */
export function createReplayJob(ctx: DispatcherContext, intervalMs: number): Poller {
  const { pool, log, now, logger } = ctx;

  /** Reads the whole log in a group of its own and enqueues the replay's deliveries. */
  async function runReplay(replay: ClaimedReplay): Promise<void> {
    const group = `${ctx.opts.group}.replay.${replay.id}`;
    let enqueued = 0;
    const only: ReplayScope = {
      endpointId: replay.endpoint_id,
      replayId: replay.id,
      since: replay.since,
      until: replay.until,
      tenantId: replay.tenant_id,
    };
    const replayConsumer = await log.consume({
      group,
      fromBeginning: true,
      maxBatchSize: 1000,
      maxWaitMs: 200,
      // Dead letters are the projector's; the dispatcher only skips them.
      handle: async ({ events, domainEvents, inboundEvents }) => {
        const made = await insertDeliveries(
          pool,
          await deliveriesFor(pool, [...events, ...domainEvents, ...inboundEvents], only),
          now(),
        );
        enqueued += made;
        if (made > 0) ctx.wakeWorkers();
        await noteReplayProgress(pool, replay.id, new Date(now().getTime() + 60_000), made);
      },
    });
    try {
      // A plain timer: `sleep` is the workers' (a wake-up meant for them must not end this wait).
      while (ctx.running() && (await log.lag(group)) > 0) await new Promise((r) => setTimeout(r, 200));
    } finally {
      await replayConsumer.stop();
    }
    if (!ctx.running()) return;
    await finishReplay(pool, replay.id, now());
    logger.info({ replayId: replay.id, webhookId: replay.endpoint_id, enqueued }, 'webhook replay done');
  }

  async function runReplays(): Promise<void> {
    while (ctx.running()) {
      const at = now();
      const replay = await claimReplay(pool, at, new Date(at.getTime() + 60_000));
      if (!replay) return;
      await runReplay(replay);
    }
  }

  return createPoller({
    name: 'webhook-replays',
    intervalMs,
    run: runReplays,
    onError: (error) => logger.warn({ err: errorText(error) }, 'webhook replay failed; retrying'),
  });
}
