import { claimDue, createPoller, type Poller } from '@tern/jobs';
import { type DispatcherContext, errorText } from './context.js';
import { deliveriesFor, insertDeliveries, type ReplayScope } from './deliveries.js';

interface ReplayRow {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  since: Date;
  until: Date;
}

/**
 * Webhook replays (SPEC §17): each pending replay is claimed with a lease, reads the whole log in
 * a consumer group of its own and enqueues the deliveries of its endpoint and window.
 */
export function createReplayJob(ctx: DispatcherContext, intervalMs: number): Poller {
  const { pool, log, now, logger } = ctx;

  async function claimReplay(): Promise<ReplayRow | null> {
    const at = now();
    const rows = await claimDue<ReplayRow>(
      pool,
      {
        table: 'webhook_replays',
        alias: 'r',
        due: `status <> 'done' AND (claimed_until IS NULL OR claimed_until < $1)`,
        orderBy: 'created_at',
        limit: 1,
        set: `status = 'running', claimed_until = $2`,
        returning: 'r.id, r.tenant_id, r.endpoint_id, r.since, r.until',
      },
      [at, new Date(at.getTime() + 60_000)],
    );
    return rows[0] ?? null;
  }

  /** Reads the whole log in a group of its own and enqueues the replay's deliveries. */
  async function runReplay(replay: ReplayRow): Promise<void> {
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
      handle: async ({ events, domainEvents }) => {
        const made = await insertDeliveries(
          pool,
          await deliveriesFor(pool, [...events, ...domainEvents], only),
          now(),
        );
        enqueued += made;
        if (made > 0) ctx.wakeWorkers();
        await pool.query(
          'UPDATE webhook_replays SET claimed_until = $2, enqueued = enqueued + $3 WHERE id = $1',
          [replay.id, new Date(now().getTime() + 60_000), made],
        );
      },
    });
    try {
      // A plain timer: `sleep` is the workers' (a wake-up meant for them must not end this wait).
      while (ctx.running() && (await log.lag(group)) > 0) await new Promise((r) => setTimeout(r, 200));
    } finally {
      await replayConsumer.stop();
    }
    if (!ctx.running()) return;
    await pool.query(`UPDATE webhook_replays SET status = 'done', finished_at = $2 WHERE id = $1`, [
      replay.id,
      now(),
    ]);
    logger.info({ replayId: replay.id, webhookId: replay.endpoint_id, enqueued }, 'webhook replay done');
  }

  async function runReplays(): Promise<void> {
    while (ctx.running()) {
      const replay = await claimReplay();
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
