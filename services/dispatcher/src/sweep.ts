import { createPoller, type Poller } from '@tern/jobs';
import { type DispatcherContext, errorText } from './context.js';

/**
 * Deletes finished deliveries (and their attempts) and finished replays older than `retentionMs`,
 * in small batches, so the sweep never holds many row locks or a long transaction; resolves with
 * how many deliveries went.
 */
export async function sweepRecords(ctx: DispatcherContext, retentionMs: number): Promise<number> {
  const cutoff = new Date(ctx.now().getTime() - retentionMs);
  let deleted = 0;
  for (;;) {
    const { rowCount } = await ctx.pool.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1 LIMIT 1000)`,
      [cutoff],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < 1000) break;
  }
  await ctx.pool.query(`DELETE FROM webhook_replays WHERE status = 'done' AND finished_at < $1`, [cutoff]);
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
