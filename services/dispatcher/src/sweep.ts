import { createPoller, type Poller } from '@tern/jobs';
import { deleteFinishedDeliveries, deleteFinishedReplays } from '@tern/webhooks';
import { type DispatcherContext, errorText } from './context.js';

/**
 * Deletes finished deliveries (and their attempts) and finished replays older than `retentionMs`,
 * in small batches, so the sweep never holds many row locks or a long transaction; resolves with
 * how many deliveries went.
 */
export async function sweepRecords(ctx: DispatcherContext, retentionMs: number): Promise<number> {
  const cutoff = new Date(ctx.now().getTime() - retentionMs);
  const deleted = await deleteFinishedDeliveries(ctx.pool, cutoff);
  await deleteFinishedReplays(ctx.pool, cutoff);
  return deleted;
}

/** The sweep every `intervalMs` (the first one an interval after start). */
export function createSweepJob(
  ctx: DispatcherContext,
  run: () => Promise<number>,
  intervalMs: number,
): Poller {
  return createPoller({
    name: 'webhook-sweep',
    intervalMs,
    firstRunMs: intervalMs,
    run,
    onError: (error) => ctx.logger.warn({ err: errorText(error) }, 'webhook record sweep failed'),
  });
}
